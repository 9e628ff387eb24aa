#include "auth/authorizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "auth/credential_store.h"
#include "auth/text_fields.h"

namespace sluice::auth {
namespace {

constexpr std::string_view file_magic = "sluice-acls 1";
constexpr std::string_view wildcard_principal = "User:*";
constexpr std::string_view wildcard_host = "*";
constexpr std::string_view wildcard_name = "*";

// Kafka's names, indexed by the wire code.
constexpr std::array<std::string_view, 13> operation_names = {
    "UNKNOWN", "ANY",  "ALL",      "READ",           "WRITE",         "CREATE",          "DELETE",
    "ALTER",   "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE"};
constexpr std::array<std::string_view, 6> type_names = {"UNKNOWN", "ANY",     "TOPIC",
                                                        "GROUP",   "CLUSTER", "TRANSACTIONAL_ID"};
constexpr std::array<std::string_view, 5> pattern_names = {"UNKNOWN", "ANY", "MATCH", "LITERAL",
                                                           "PREFIXED"};
constexpr std::array<std::string_view, 4> permission_names = {"UNKNOWN", "ANY", "DENY", "ALLOW"};

template <std::size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, std::int8_t code) {
    if (code < 0 || static_cast<std::size_t>(code) >= N) {
        return "UNKNOWN";
    }
    return names[static_cast<std::size_t>(code)];
}

// Upper case, '_' and '-' dropped, for case- and separator-insensitive comparison.
std::string squash(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '_' || c == '-') {
            continue;
        }
        out.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
    }
    return out;
}

template <typename Enum, std::size_t N>
std::optional<Enum> parse_name(const std::array<std::string_view, N>& names, std::string_view s) {
    const std::string want = squash(s);
    if (want.empty()) {
        return std::nullopt;
    }
    for (std::size_t i = 0; i < N; ++i) {
        if (squash(names[i]) == want) {
            return static_cast<Enum>(i);
        }
    }
    return std::nullopt;
}

// AclEntry.supportedOperations: what each resource type can be granted (ALL always).
bool supports(resource_type type, acl_operation op) {
    using o = acl_operation;
    if (op == o::all) {
        return true;
    }
    switch (type) {
    case resource_type::topic:
        return op == o::read || op == o::write || op == o::create || op == o::describe ||
               op == o::remove || op == o::alter || op == o::describe_configs ||
               op == o::alter_configs;
    case resource_type::group:
        return op == o::read || op == o::describe || op == o::remove;
    case resource_type::cluster:
        return op == o::create || op == o::cluster_action || op == o::describe_configs ||
               op == o::alter_configs || op == o::idempotent_write || op == o::alter ||
               op == o::describe;
    case resource_type::transactional_id:
        return op == o::describe || op == o::write;
    default:
        return false;
    }
}

bool valid_code(std::int8_t code, std::size_t count) {
    return code >= 0 && static_cast<std::size_t>(code) < count;
}

// Whether an ALLOW for `granted` covers a request for `wanted` (Kafka's implications).
bool allow_covers(acl_operation granted, acl_operation wanted) {
    using o = acl_operation;
    if (granted == wanted || granted == o::all) {
        return true;
    }
    if (wanted == o::describe) {
        return granted == o::read || granted == o::write || granted == o::remove ||
               granted == o::alter;
    }
    if (wanted == o::describe_configs) {
        return granted == o::alter_configs;
    }
    return false;
}

bool deny_covers(acl_operation denied, acl_operation wanted) {
    return denied == wanted || denied == acl_operation::all;
}

bool principal_matches(std::string_view acl, std::string_view principal) {
    return acl == principal || acl == wildcard_principal;
}

bool host_matches(std::string_view acl, std::string_view host) {
    return acl == host || acl == wildcard_host;
}

bool name_matches_filter(const acl_binding_filter& f, const acl_binding& b) {
    if (!f.name) {
        return f.pattern == pattern_type::any || f.pattern == pattern_type::match ||
               f.pattern == b.pattern;
    }
    switch (f.pattern) {
    case pattern_type::any:
        return b.name == *f.name;
    case pattern_type::match:
        if (b.pattern == pattern_type::literal) {
            return b.name == *f.name || b.name == wildcard_name;
        }
        return b.pattern == pattern_type::prefixed && f.name->starts_with(b.name);
    default:
        return b.pattern == f.pattern && b.name == *f.name;
    }
}

}  // namespace

std::string_view to_string(acl_operation op) {
    return name_of(operation_names, static_cast<std::int8_t>(op));
}
std::string_view to_string(resource_type t) {
    return name_of(type_names, static_cast<std::int8_t>(t));
}
std::string_view to_string(pattern_type p) {
    return name_of(pattern_names, static_cast<std::int8_t>(p));
}
std::string_view to_string(acl_permission p) {
    return name_of(permission_names, static_cast<std::int8_t>(p));
}

std::optional<acl_operation> parse_acl_operation(std::string_view s) {
    return parse_name<acl_operation>(operation_names, s);
}
std::optional<resource_type> parse_resource_type(std::string_view s) {
    return parse_name<resource_type>(type_names, s);
}
std::optional<pattern_type> parse_pattern_type(std::string_view s) {
    return parse_name<pattern_type>(pattern_names, s);
}
std::optional<acl_permission> parse_acl_permission(std::string_view s) {
    return parse_name<acl_permission>(permission_names, s);
}

std::string describe(const acl_binding& b) {
    std::string out = "(principal=" + b.principal + ", host=" + b.host +
                      ", operation=" + std::string(to_string(b.operation)) +
                      ", permissionType=" + std::string(to_string(b.permission)) + ") on " +
                      std::string(to_string(b.type)) + ":" + std::string(to_string(b.pattern)) +
                      ":" + b.name;
    return out;
}

std::optional<std::string> validate(const acl_binding& b) {
    if (!valid_code(static_cast<std::int8_t>(b.type), type_names.size()) ||
        b.type == resource_type::unknown || b.type == resource_type::any) {
        return "invalid resource type";
    }
    if (b.pattern != pattern_type::literal && b.pattern != pattern_type::prefixed) {
        return "invalid resource pattern type (LITERAL or PREFIXED)";
    }
    if (!valid_code(static_cast<std::int8_t>(b.operation), operation_names.size()) ||
        b.operation == acl_operation::unknown || b.operation == acl_operation::any) {
        return "invalid operation";
    }
    if (b.permission != acl_permission::allow && b.permission != acl_permission::deny) {
        return "invalid permission type (ALLOW or DENY)";
    }
    const auto colon = b.principal.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == b.principal.size()) {
        return "invalid principal '" + b.principal + "' (expected Type:name, as User:alice)";
    }
    if (b.host.empty()) {
        return "empty host (use * for every host)";
    }
    if (b.name.empty()) {
        return "empty resource name";
    }
    if (b.type == resource_type::cluster &&
        (b.name != cluster_resource_name || b.pattern != pattern_type::literal)) {
        return "the only valid name for the CLUSTER resource is kafka-cluster (LITERAL)";
    }
    if (!supports(b.type, b.operation)) {
        return "operation " + std::string(to_string(b.operation)) +
               " is not supported for resource type " + std::string(to_string(b.type));
    }
    return std::nullopt;
}

namespace {

/// A code Kafka defines for the enum (`names` lists them), other than UNKNOWN.
template <typename Enum, typename Names>
bool known(Enum v, const Names& names) {
    return valid_code(static_cast<std::int8_t>(v), names.size()) && v != Enum::unknown;
}

}  // namespace

std::optional<std::string> validate(const acl_binding_filter& f) {
    if (!known(f.type, type_names)) {
        return "invalid resource type";
    }
    if (!known(f.pattern, pattern_names)) {
        return "invalid resource pattern type";
    }
    if (!known(f.operation, operation_names)) {
        return "invalid operation";
    }
    if (!known(f.permission, permission_names)) {
        return "invalid permission type";
    }
    return std::nullopt;
}

bool acl_binding_filter::matches(const acl_binding& b) const {
    if (type != resource_type::any && type != b.type) {
        return false;
    }
    if (!name_matches_filter(*this, b)) {
        return false;
    }
    if (principal && *principal != b.principal) {
        return false;
    }
    if (host && *host != b.host) {
        return false;
    }
    if (operation != acl_operation::any && operation != b.operation) {
        return false;
    }
    return permission == acl_permission::any || permission == b.permission;
}

authorizer::authorizer(authorizer_settings settings, std::filesystem::path file)
    : settings_(std::move(settings)), file_(std::move(file)) {
    if (!file_.empty()) {
        load();
    }
}

void authorizer::replace_acls(std::vector<acl_binding> bindings) {
    std::sort(bindings.begin(), bindings.end());
    bindings.erase(std::unique(bindings.begin(), bindings.end()), bindings.end());
    std::lock_guard change(change_mutex_);
    apply(std::move(bindings));
}

void authorizer::apply_shared(std::span<const acl_binding> bindings, bool present) {
    std::lock_guard change(change_mutex_);
    std::vector<acl_binding> next = acls();
    for (const acl_binding& b : bindings) {
        const auto at = std::lower_bound(next.begin(), next.end(), b);
        const bool there = at != next.end() && *at == b;
        if (present && !there) {
            next.insert(at, b);
        } else if (!present && there) {
            next.erase(at);
        }
    }
    apply(std::move(next));
}

std::filesystem::path authorizer::path_in(const std::filesystem::path& data_dir) {
    return data_dir / "acls";
}

bool authorizer::is_super_user(std::string_view principal) const {
    return std::find(settings_.super_users.begin(), settings_.super_users.end(), principal) !=
           settings_.super_users.end();
}

const authorizer::type_index* authorizer::index_of(resource_type type) const {
    const auto i = static_cast<std::size_t>(type);
    if (i >= type_count) {
        return nullptr;
    }
    return &index_[i];
}

bool authorizer::allowed(std::string_view principal, std::string_view host, acl_operation op,
                         resource_type type, std::string_view name) const {
    if (!settings_.enabled || is_super_user(principal)) {
        return true;
    }
    std::shared_lock lock(mutex_);
    const type_index* index = index_of(type);
    if (index == nullptr) {
        return false;
    }
    bool any_acl = false;
    bool denied = false;
    bool allow = false;
    auto visit = [&](const std::vector<entry>& entries) {
        for (const entry& e : entries) {
            any_acl = true;
            if (!principal_matches(e.principal, principal) || !host_matches(e.host, host)) {
                continue;
            }
            if (e.permission == acl_permission::deny) {
                denied = denied || deny_covers(e.operation, op);
            } else {
                allow = allow || allow_covers(e.operation, op);
            }
        }
    };
    if (auto it = index->literal.find(name); it != index->literal.end()) {
        visit(it->second);
    }
    if (name != wildcard_name) {
        if (auto it = index->literal.find(wildcard_name); it != index->literal.end()) {
            visit(it->second);
        }
    }
    if (!index->prefixed.empty()) {
        if (index->prefixed.size() < name.size()) {
            for (const auto& [prefix, entries] : index->prefixed) {
                if (name.starts_with(prefix)) {
                    visit(entries);
                }
            }
        } else {
            for (std::size_t n = 1; n <= name.size(); ++n) {
                if (auto it = index->prefixed.find(name.substr(0, n));
                    it != index->prefixed.end()) {
                    visit(it->second);
                }
            }
        }
    }
    if (!any_acl) {
        return settings_.allow_everyone_if_no_acl_found;
    }
    return !denied && allow;
}

bool authorizer::allowed_any(std::string_view principal, std::string_view host,
                             acl_operation op, resource_type type) const {
    if (!settings_.enabled || is_super_user(principal)) {
        return true;
    }
    std::shared_lock lock(mutex_);
    const type_index* index = index_of(type);
    if (index == nullptr) {
        return false;
    }
    if (index->empty()) {
        return settings_.allow_everyone_if_no_acl_found;
    }
    auto has = [&](const std::vector<entry>& entries, acl_permission perm) {
        for (const entry& e : entries) {
            if (e.permission != perm || !principal_matches(e.principal, principal) ||
                !host_matches(e.host, host)) {
                continue;
            }
            if (perm == acl_permission::deny ? deny_covers(e.operation, op)
                                             : allow_covers(e.operation, op)) {
                return true;
            }
        }
        return false;
    };
    // Denied everywhere: a "*" literal deny.
    if (auto it = index->literal.find(wildcard_name);
        it != index->literal.end() && has(it->second, acl_permission::deny)) {
        return false;
    }
    auto denied_by_prefix = [&](std::string_view name) {
        for (const auto& [prefix, entries] : index->prefixed) {
            if (name.starts_with(prefix) && has(entries, acl_permission::deny)) {
                return true;
            }
        }
        return false;
    };
    for (const auto& [name, entries] : index->literal) {
        if (!has(entries, acl_permission::allow)) {
            continue;
        }
        if (name == wildcard_name) {
            return true;
        }
        if (!has(entries, acl_permission::deny) && !denied_by_prefix(name)) {
            return true;
        }
    }
    for (const auto& [prefix, entries] : index->prefixed) {
        if (has(entries, acl_permission::allow) && !denied_by_prefix(prefix)) {
            return true;
        }
    }
    return false;
}

std::vector<std::optional<std::string>> authorizer::create_acls(
    std::span<const acl_binding> bindings) {
    std::vector<std::optional<std::string>> results;
    results.reserve(bindings.size());
    std::lock_guard change(change_mutex_);
    std::vector<acl_binding> next = acls();
    bool changed = false;
    for (const acl_binding& b : bindings) {
        auto why = validate(b);
        if (!why && !std::binary_search(next.begin(), next.end(), b)) {
            next.insert(std::upper_bound(next.begin(), next.end(), b), b);
            changed = true;
        }
        results.push_back(std::move(why));
    }
    if (changed) {
        save(next);
        apply(std::move(next));
    }
    return results;
}

std::vector<authorizer::delete_result> authorizer::delete_acls(
    std::span<const acl_binding_filter> filters) {
    std::vector<delete_result> results;
    results.reserve(filters.size());
    std::lock_guard change(change_mutex_);
    const std::vector<acl_binding> before = acls();
    std::vector<bool> gone(before.size(), false);
    bool changed = false;
    for (const acl_binding_filter& f : filters) {
        delete_result r;
        r.error = validate(f);
        if (!r.error) {
            // Every filter sees the ACLs as they were before the request (Kafka's way).
            for (std::size_t i = 0; i < before.size(); ++i) {
                if (f.matches(before[i])) {
                    r.deleted.push_back(before[i]);
                    gone[i] = true;
                    changed = true;
                }
            }
        }
        results.push_back(std::move(r));
    }
    if (changed) {
        std::vector<acl_binding> next;
        for (std::size_t i = 0; i < before.size(); ++i) {
            if (!gone[i]) {
                next.push_back(before[i]);
            }
        }
        save(next);
        apply(std::move(next));
    }
    return results;
}

std::vector<acl_binding> authorizer::describe_acls(const acl_binding_filter& filter) const {
    std::vector<acl_binding> out;
    std::shared_lock lock(mutex_);
    for (const acl_binding& b : bindings_) {
        if (filter.matches(b)) {
            out.push_back(b);
        }
    }
    return out;
}

std::vector<acl_binding> authorizer::acls() const {
    std::shared_lock lock(mutex_);
    return bindings_;
}

void authorizer::apply(std::vector<acl_binding> bindings) {
    std::array<type_index, type_count> index;
    for (const acl_binding& b : bindings) {
        type_index& ti = index[static_cast<std::size_t>(b.type)];
        entry_map& m = b.pattern == pattern_type::prefixed ? ti.prefixed : ti.literal;
        m[b.name].push_back(entry{b.principal, b.host, b.operation, b.permission});
    }
    std::unique_lock lock(mutex_);
    bindings_ = std::move(bindings);
    index_ = std::move(index);
}

void authorizer::save(const std::vector<acl_binding>& bindings) const {
    if (file_.empty()) {
        return;  // the cluster's ACLs (upstream mode): nothing on disk
    }
    std::ostringstream text;
    text << "# sluice ACLs: acl TYPE PATTERN PERMISSION OPERATION PRINCIPAL HOST NAME\n"
         << file_magic << "\n";
    for (const acl_binding& b : bindings) {
        text << "acl " << to_string(b.type) << ' ' << to_string(b.pattern) << ' '
             << to_string(b.permission) << ' ' << to_string(b.operation) << ' '
             << encode_field(b.principal) << ' ' << encode_field(b.host) << ' '
             << encode_field(b.name) << '\n';
    }
    write_private_file(file_, text.str());
}

void authorizer::load() {
    std::vector<acl_binding> bindings;
    const bool found = read_record_file(file_, file_magic, "ACL", [&](std::string_view line) {
        const auto fields = split_spaces(line);
        if (fields.size() != 8 || fields[0] != "acl") {
            throw bad_record(
                "expected 'acl TYPE PATTERN PERMISSION OPERATION PRINCIPAL HOST NAME'");
        }
        acl_binding b;
        const auto type = parse_resource_type(fields[1]);
        const auto pattern = parse_pattern_type(fields[2]);
        const auto permission = parse_acl_permission(fields[3]);
        const auto operation = parse_acl_operation(fields[4]);
        auto principal = decode_field(fields[5]);
        auto host = decode_field(fields[6]);
        auto name = decode_field(fields[7]);
        if (!type || !pattern || !permission || !operation) {
            throw bad_record("unknown resource type, pattern type, permission or operation");
        }
        if (!principal || !host || !name) {
            throw bad_record("malformed percent escape");
        }
        b.type = *type;
        b.pattern = *pattern;
        b.permission = *permission;
        b.operation = *operation;
        b.principal = std::move(*principal);
        b.host = std::move(*host);
        b.name = std::move(*name);
        if (auto why = validate(b)) {
            throw bad_record(*why);
        }
        bindings.push_back(std::move(b));
    });
    if (!found) {
        return;
    }
    std::sort(bindings.begin(), bindings.end());
    bindings.erase(std::unique(bindings.begin(), bindings.end()), bindings.end());
    apply(std::move(bindings));
}

}  // namespace sluice::auth
