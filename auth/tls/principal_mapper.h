// Kafka's ssl.principal.mapping.rules: turns the subject of a client certificate (RFC 2253
// form, "CN=alice,OU=ops,O=example") into the user name of the connection's principal. Built
// once from the setting (throws on a bad rule); read-only afterwards, so thread-safe.
#pragma once

#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::auth {

/// Thrown for a rule list that does not parse; what() names the rule.
class principal_rules_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The rules, Kafka's syntax (SslPrincipalMapper): a comma-separated list of
///   DEFAULT                          the subject unchanged
///   RULE:pattern/replacement/[LU]    when the whole subject matches `pattern`, the subject with
///                                    every match replaced ($1 refers to a group), then made
///                                    lower (L) or upper (U) case when asked
/// A '/' inside a pattern or replacement is written "\/"; a comma inside a pattern belongs to
/// the pattern (a rule ends at its last '/'). The first rule that matches decides; when none
/// does, there is no principal (the connection is refused). An empty list is DEFAULT.
class principal_mapper {
public:
    /// Parses `rules`. Throws principal_rules_error.
    explicit principal_mapper(std::string_view rules = "DEFAULT");

    /// The user name for `subject`, or nullopt when no rule matches.
    std::optional<std::string> map(const std::string& subject) const;

private:
    struct rule {
        bool is_default = false;
        std::string pattern_text;
        std::regex pattern;
        std::string replacement;
        char case_change = 0;  // 'L', 'U' or 0
    };
    std::vector<rule> rules_;
};

}  // namespace sluice::auth
