// Kafka's ACL authorizer: who may do what on which topic, group, cluster or transactional id.
// Owned by auth/; every front asks it (`allowed`) per request, the Kafka front's CreateAcls,
// DeleteAcls and DescribeAcls and `sluice acls` change it, and it persists to DATA_DIR/acls.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::auth {

/// Kafka's AclOperation codes (the wire values of CreateAcls and friends).
enum class acl_operation : std::int8_t {
    unknown = 0,
    any = 1,
    all = 2,
    read = 3,
    write = 4,
    create = 5,
    remove = 6,  // Kafka's DELETE
    alter = 7,
    describe = 8,
    cluster_action = 9,
    describe_configs = 10,
    alter_configs = 11,
    idempotent_write = 12
};

/// Kafka's ResourceType codes.
enum class resource_type : std::int8_t {
    unknown = 0,
    any = 1,
    topic = 2,
    group = 3,
    cluster = 4,
    transactional_id = 5
};

/// Kafka's PatternType codes.
enum class pattern_type : std::int8_t { unknown = 0, any = 1, match = 2, literal = 3, prefixed = 4 };

/// Kafka's AclPermissionType codes.
enum class acl_permission : std::int8_t { unknown = 0, any = 1, deny = 2, allow = 3 };

/// One ACL: `permission` for `principal` connecting from `host` to do `operation` on the
/// resources of `type` named `name` (LITERAL: that name, or every name when it is "*";
/// PREFIXED: every name starting with it).
struct acl_binding {
    resource_type type = resource_type::unknown;
    std::string name;
    pattern_type pattern = pattern_type::literal;
    std::string principal;
    std::string host;
    acl_operation operation = acl_operation::unknown;
    acl_permission permission = acl_permission::unknown;

    bool operator==(const acl_binding&) const = default;
    auto operator<=>(const acl_binding&) const = default;
};

/// Kafka's AclBindingFilter: nullopt strings and ANY codes match everything; pattern MATCH
/// matches the LITERAL binding of the name, the LITERAL "*" and every PREFIXED binding whose
/// prefix the name starts with; pattern ANY matches LITERAL and PREFIXED bindings of exactly
/// the name.
struct acl_binding_filter {
    resource_type type = resource_type::any;
    std::optional<std::string> name{};
    pattern_type pattern = pattern_type::any;
    std::optional<std::string> principal{};
    std::optional<std::string> host{};
    acl_operation operation = acl_operation::any;
    acl_permission permission = acl_permission::any;

    bool matches(const acl_binding& b) const;
};

struct authorizer_settings {
    bool enabled = false;
    std::vector<std::string> super_users{};  // "User:admin"
    bool allow_everyone_if_no_acl_found = false;
};

/// Kafka's name of the one cluster resource.
constexpr std::string_view cluster_resource_name = "kafka-cluster";

/// Kafka's names, upper case with underscores ("DESCRIBE_CONFIGS", "TRANSACTIONAL_ID").
std::string_view to_string(acl_operation op);
std::string_view to_string(resource_type t);
std::string_view to_string(pattern_type p);
std::string_view to_string(acl_permission p);
/// Case-insensitive, underscores and dashes ignored: "ClusterAction", "cluster_action" and
/// "CLUSTER_ACTION" all parse; "Delete" is acl_operation::remove. nullopt when unknown.
std::optional<acl_operation> parse_acl_operation(std::string_view s);
std::optional<resource_type> parse_resource_type(std::string_view s);
std::optional<pattern_type> parse_pattern_type(std::string_view s);
std::optional<acl_permission> parse_acl_permission(std::string_view s);

/// kafka-acls' display: "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)
/// on TOPIC:LITERAL:a".
std::string describe(const acl_binding& b);

/// Why `b` cannot be stored (Kafka's CreateAcls validation: a concrete type, pattern,
/// operation and permission; a "Type:name" principal; a host; a name, "kafka-cluster" for the
/// cluster; an operation the resource type supports), or nullopt when it can.
std::optional<std::string> validate(const acl_binding& b);
/// Why `f` is not a valid filter (unknown codes), or nullopt.
std::optional<std::string> validate(const acl_binding_filter& f);

/// The ACLs of one data directory, in memory, with Kafka's decision.
///
/// File (text, UTF-8, one ACL per line, fields separated by one space, each field
/// percent-encoded: '%', space and control bytes as %XX):
///   # comment lines and blank lines are ignored
///   sluice-acls 1
///   acl TYPE PATTERN PERMISSION OPERATION PRINCIPAL HOST NAME
/// with TYPE, PATTERN, PERMISSION and OPERATION in Kafka's names (topic literal allow read).
/// Rewritten atomically on every change (write_private_file).
///
/// Concurrency: thread-safe; checks take a shared lock and look up maps (no allocation),
/// changes are serialised, persisted, then applied under an exclusive lock.
class authorizer {
public:
    /// Loads `file` (a missing file is no ACLs; an empty path: none, and nothing is ever
    /// written). Throws std::runtime_error naming the file and
    /// line when it cannot be read or does not parse.
    authorizer(authorizer_settings settings, std::filesystem::path file);

    /// The file name inside a data directory.
    static std::filesystem::path path_in(const std::filesystem::path& data_dir);

    bool enabled() const { return settings_.enabled; }
    const authorizer_settings& settings() const { return settings_; }
    const std::filesystem::path& file() const { return file_; }
    bool is_super_user(std::string_view principal) const;

    /// Kafka's decision: super users pass; a matching DENY wins; then a matching ALLOW
    /// (with Kafka's implications: READ/WRITE/DELETE/ALTER imply DESCRIBE, ALTER_CONFIGS
    /// implies DESCRIBE_CONFIGS, ALL matches every operation); no ACL on the resource at
    /// all -> allow_everyone_if_no_acl_found. Disabled -> always true.
    bool allowed(std::string_view principal, std::string_view host, acl_operation op,
                 resource_type type, std::string_view name) const;
    /// True when `principal` may do `op` on at least one resource of `type` (Kafka's
    /// "WRITE on any topic" rule for idempotent InitProducerId): an ALLOW binding not covered
    /// by a DENY (the same literal name, a deny prefix of it, or the "*" literal). With no ACL
    /// of that type at all, allow_everyone_if_no_acl_found. Disabled -> always true.
    bool allowed_any(std::string_view principal, std::string_view host, acl_operation op,
                     resource_type type) const;

    /// CreateAcls: per binding, nullopt when stored (already there counts as stored) or why
    /// not (INVALID_REQUEST). Persisted before it returns; throws std::runtime_error when the
    /// file cannot be written (nothing changes then).
    std::vector<std::optional<std::string>> create_acls(std::span<const acl_binding> bindings);

    struct delete_result {
        std::optional<std::string> error;  // invalid filter (INVALID_REQUEST)
        std::vector<acl_binding> deleted;
    };
    /// DeleteAcls: per filter, the bindings it removed. Persisted before it returns; throws
    /// std::runtime_error when the file cannot be written (nothing changes then).
    std::vector<delete_result> delete_acls(std::span<const acl_binding_filter> filters);

    /// DescribeAcls: the bindings `filter` matches, sorted.
    std::vector<acl_binding> describe_acls(const acl_binding_filter& filter) const;
    /// Every binding, sorted.
    std::vector<acl_binding> acls() const;
    /// Replaces every binding at once (upstream mode: the cluster's ACLs, from its
    /// _sluice_security topic). Nothing is saved.
    void replace_acls(std::vector<acl_binding> bindings);
    /// Adds (`present`) or removes exactly `bindings`, in memory only: upstream mode's change
    /// of the fleet's ACLs once the _sluice_security topic stored it (the mirror applies the
    /// same records when it reads them). Nothing is saved.
    void apply_shared(std::span<const acl_binding> bindings, bool present);

private:
    struct entry {
        std::string principal;
        std::string host;
        acl_operation operation;
        acl_permission permission;
    };
    using entry_map = std::map<std::string, std::vector<entry>, std::less<>>;
    struct type_index {
        entry_map literal;
        entry_map prefixed;
        bool empty() const { return literal.empty() && prefixed.empty(); }
    };
    static constexpr std::size_t type_count = 6;

    void load();
    void save(const std::vector<acl_binding>& bindings) const;
    void apply(std::vector<acl_binding> bindings);  // takes mutex_ exclusively
    const type_index* index_of(resource_type type) const;

    authorizer_settings settings_;
    std::filesystem::path file_;
    mutable std::shared_mutex mutex_;  // bindings_ and index_
    std::mutex change_mutex_;          // one change (compute, save, apply) at a time
    std::vector<acl_binding> bindings_;  // sorted, unique
    std::array<type_index, type_count> index_;
};

}  // namespace sluice::auth
