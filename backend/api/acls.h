// ACLs at the client level (owned by backend/api): Kafka's AclBinding and AclBindingFilter in
// plain values, with Kafka's wire codes, for admin's describe_acls / create_acls / delete_acls,
// and `acl_store`, where the native backend finds its ACLs (the gateway's authorizer: backend/
// never sees auth/, so the start-up file hands the native client level an adapter).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/api/common.h"

namespace sluice::backend::api {

/// Kafka's ResourceType codes.
enum class acl_resource_type : std::int8_t {
    unknown = 0,
    any = 1,
    topic = 2,
    group = 3,
    cluster = 4,
    transactional_id = 5,
    delegation_token = 6,
    user = 7
};

/// Kafka's PatternType codes.
enum class acl_pattern_type : std::int8_t {
    unknown = 0,
    any = 1,
    match = 2,
    literal = 3,
    prefixed = 4
};

/// Kafka's AclOperation codes (remove is Kafka's DELETE).
enum class acl_operation : std::int8_t {
    unknown = 0,
    any = 1,
    all = 2,
    read = 3,
    write = 4,
    create = 5,
    remove = 6,
    alter = 7,
    describe = 8,
    cluster_action = 9,
    describe_configs = 10,
    alter_configs = 11,
    idempotent_write = 12
};

/// Kafka's AclPermissionType codes.
enum class acl_permission : std::int8_t { unknown = 0, any = 1, deny = 2, allow = 3 };

/// One ACL: `permission` for `principal` from `host` to do `operation` on the resources of
/// `resource_type` named `resource_name` (as `pattern_type` matches names).
struct acl_binding {
    acl_resource_type resource_type = acl_resource_type::unknown;
    std::string resource_name;
    acl_pattern_type pattern_type = acl_pattern_type::literal;
    std::string principal;
    std::string host;
    acl_operation operation = acl_operation::unknown;
    acl_permission permission = acl_permission::unknown;

    bool operator==(const acl_binding&) const = default;
};

/// Kafka's AclBindingFilter: nullopt strings and ANY codes match everything (pattern MATCH:
/// the bindings that apply to the name, as Kafka's DescribeAcls reads it).
struct acl_filter {
    acl_resource_type resource_type = acl_resource_type::any;
    std::optional<std::string> resource_name{};
    acl_pattern_type pattern_type = acl_pattern_type::any;
    std::optional<std::string> principal{};
    std::optional<std::string> host{};
    acl_operation operation = acl_operation::any;
    acl_permission permission = acl_permission::any;
};

/// The ACLs of a native backend. Errors of all three: unsupported when no authorizer is
/// configured (Kafka's SECURITY_DISABLED); invalid_request for a binding that cannot be
/// stored or a filter that is not valid (the message says why); unknown when the store
/// cannot be saved. Thread-safe; calls do not block on the network.
class acl_store {
public:
    virtual ~acl_store() = default;
    /// The bindings `filter` matches, sorted.
    virtual backend_result<std::vector<acl_binding>> describe_acls(const acl_filter& filter) = 0;
    /// Stores every binding or none (each is checked first).
    virtual backend_result<void> create_acls(std::vector<acl_binding> bindings) = 0;
    /// Removes what `filter` matches; answers what it removed.
    virtual backend_result<std::vector<acl_binding>> delete_acls(const acl_filter& filter) = 0;
};

}  // namespace sluice::backend::api
