#include "auth/tls/principal_mapper.h"

#include <algorithm>
#include <cctype>

namespace sluice::auth {
namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void skip_space(std::string_view text, std::size_t& i) {
    while (i < text.size() && is_space(text[i])) {
        ++i;
    }
}

/// Reads up to the next '/' not escaped by a backslash; `i` ends on that '/'. The escape "\/"
/// becomes '/', other escapes are kept for the regular expression.
std::optional<std::string> read_part(std::string_view text, std::size_t& i) {
    std::string out;
    while (i < text.size()) {
        const char c = text[i];
        if (c == '\\' && i + 1 < text.size()) {
            if (text[i + 1] == '/') {
                out.push_back('/');
            } else {
                out.push_back(c);
                out.push_back(text[i + 1]);
            }
            i += 2;
            continue;
        }
        if (c == '/') {
            return out;
        }
        out.push_back(c);
        ++i;
    }
    return std::nullopt;
}

}  // namespace

principal_mapper::principal_mapper(std::string_view rules) {
    std::size_t i = 0;
    skip_space(rules, i);
    if (i == rules.size()) {
        rules_.push_back(rule{true, {}, {}, {}, 0});
        return;
    }
    while (i < rules.size()) {
        skip_space(rules, i);
        const std::size_t start = i;
        if (rules.substr(i, 7) == "DEFAULT") {
            rules_.push_back(rule{true, {}, {}, {}, 0});
            i += 7;
        } else if (rules.substr(i, 5) == "RULE:") {
            i += 5;
            rule r;
            auto pattern = read_part(rules, i);
            if (!pattern) {
                throw principal_rules_error("ssl.principal.mapping.rules: rule '" +
                                            std::string(rules.substr(start)) +
                                            "' needs RULE:pattern/replacement/");
            }
            ++i;
            auto replacement = read_part(rules, i);
            if (!replacement) {
                throw principal_rules_error("ssl.principal.mapping.rules: rule '" +
                                            std::string(rules.substr(start)) +
                                            "' needs RULE:pattern/replacement/");
            }
            ++i;
            if (i < rules.size() && (rules[i] == 'L' || rules[i] == 'U')) {
                r.case_change = rules[i];
                ++i;
            }
            r.pattern_text = *pattern;
            r.replacement = *replacement;
            try {
                r.pattern = std::regex(r.pattern_text, std::regex::ECMAScript);
            } catch (const std::regex_error& e) {
                throw principal_rules_error("ssl.principal.mapping.rules: bad pattern '" +
                                            r.pattern_text + "': " + e.what());
            }
            rules_.push_back(std::move(r));
        } else {
            std::size_t end = rules.find(',', i);
            throw principal_rules_error(
                "ssl.principal.mapping.rules: expected DEFAULT or RULE:pattern/replacement/[LU], "
                "got '" + std::string(rules.substr(start, end == std::string_view::npos
                                                              ? std::string_view::npos
                                                              : end - start)) + "'");
        }
        skip_space(rules, i);
        if (i == rules.size()) {
            break;
        }
        if (rules[i] != ',') {
            throw principal_rules_error("ssl.principal.mapping.rules: unexpected '" +
                                        std::string(rules.substr(i)) + "' after a rule");
        }
        ++i;
        skip_space(rules, i);
        if (i == rules.size()) {
            throw principal_rules_error("ssl.principal.mapping.rules: empty rule after ','");
        }
    }
}

std::optional<std::string> principal_mapper::map(const std::string& subject) const {
    for (const auto& r : rules_) {
        if (r.is_default) {
            return subject;
        }
        if (!std::regex_match(subject, r.pattern)) {
            continue;
        }
        std::string out = std::regex_replace(subject, r.pattern, r.replacement);
        if (r.case_change == 'L') {
            std::transform(out.begin(), out.end(), out.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        } else if (r.case_change == 'U') {
            std::transform(out.begin(), out.end(), out.begin(),
                           [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        }
        return out;
    }
    return std::nullopt;
}

}  // namespace sluice::auth
