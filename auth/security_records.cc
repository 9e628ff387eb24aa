#include "auth/security_records.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <string>

#include "auth/text_fields.h"
#include "protocol/core/base64.h"

namespace sluice::auth {
namespace {

constexpr std::string_view acl_present = "present";
constexpr std::array<std::string_view, quota_kind_count> security_quota_keys = {
    "producer_byte_rate", "consumer_byte_rate", "request_percentage"};

std::string security_key(security_kind k, std::string_view name) {
    std::string key(to_string(k));
    key += ':';
    key += name;
    return key;
}


std::string security_number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::string acl_name_of(const acl_binding& b) {
    std::string s;
    s += to_string(b.type);
    s += ' ';
    s += to_string(b.pattern);
    s += ' ';
    s += to_string(b.permission);
    s += ' ';
    s += to_string(b.operation);
    s += ' ';
    s += encode_field(b.principal);
    s += ' ';
    s += encode_field(b.host);
    s += ' ';
    s += encode_field(b.name);
    return s;
}

applied_record invalid_record(security_kind k, std::string why) {
    return {applied_record::outcome::invalid, k, std::move(why)};
}

applied_record apply_user(security_snapshot& s, std::string_view name,
                          std::optional<std::string_view> value) {
    if (!valid_user_name(name)) {
        return invalid_record(security_kind::user, "invalid user name");
    }
    if (!value) {
        s.users.erase(std::string(name));
        return {applied_record::outcome::applied, security_kind::user, {}};
    }
    std::string why;
    auto creds = parse_user_credentials(*value, &why);
    if (!creds) {
        return invalid_record(security_kind::user, "user " + std::string(name) + ": " + why);
    }
    s.users[std::string(name)] = std::move(*creds);
    return {applied_record::outcome::applied, security_kind::user, {}};
}

applied_record apply_acl(security_snapshot& s, std::string_view name,
                         std::optional<std::string_view> value) {
    const auto fields = split_spaces(name);
    if (fields.size() != 7) {
        return invalid_record(security_kind::acl,
                              "expected TYPE PATTERN PERMISSION OPERATION PRINCIPAL HOST NAME");
    }
    const auto type = parse_resource_type(fields[0]);
    const auto pattern = parse_pattern_type(fields[1]);
    const auto permission = parse_acl_permission(fields[2]);
    const auto operation = parse_acl_operation(fields[3]);
    auto principal = decode_field(fields[4]);
    auto host = decode_field(fields[5]);
    auto resource = decode_field(fields[6]);
    if (!type || !pattern || !permission || !operation || !principal || !host || !resource) {
        return invalid_record(security_kind::acl, "malformed ACL key");
    }
    acl_binding b{*type,  std::move(*resource), *pattern, std::move(*principal),
                  std::move(*host), *operation, *permission};
    if (auto why = validate(b)) {
        return invalid_record(security_kind::acl, *why);
    }
    if (value && *value != acl_present) {
        return invalid_record(security_kind::acl, "unexpected ACL value");
    }
    if (value) {
        s.acls.insert(std::move(b));
    } else {
        s.acls.erase(b);
    }
    return {applied_record::outcome::applied, security_kind::acl, {}};
}

applied_record apply_quota(security_snapshot& s, std::string_view name,
                           std::optional<std::string_view> value) {
    const auto fields = split_spaces(name);
    if (fields.size() != 2) {
        return invalid_record(security_kind::quota, "expected USER CLIENT");
    }
    const auto user = parse_entity_part(fields[0]);
    const auto client = parse_entity_part(fields[1]);
    if (!user || !client || (!user->present && !client->present)) {
        return invalid_record(security_kind::quota,
                              "bad entity (each part '-', '<default>' or '=NAME', one set)");
    }
    const quota_entity entity{*user, *client};
    if (!value) {
        s.quotas.erase(entity);
        return {applied_record::outcome::applied, security_kind::quota, {}};
    }
    quota_values values;
    for (const auto field : split_spaces(*value)) {
        const auto eq = field.find('=');
        const auto kind = parse_quota_kind(field.substr(0, eq));
        if (eq == std::string_view::npos || !kind) {
            return invalid_record(security_kind::quota, "expected KEY=VALUE");
        }
        const std::string number(field.substr(eq + 1));
        double v = 0;
        std::size_t used = 0;
        try {
            v = std::stod(number, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (number.empty() || used != number.size()) {
            return invalid_record(security_kind::quota, "'" + number + "' is not a number");
        }
        if (auto why = client_quotas::validate({quota_op{std::string(to_string(*kind)), v}})) {
            return invalid_record(security_kind::quota, why->message);
        }
        values[static_cast<std::size_t>(*kind)] = v;
    }
    if (std::none_of(values.begin(), values.end(), [](const auto& v) { return v.has_value(); })) {
        return invalid_record(security_kind::quota, "no quota value");
    }
    s.quotas[entity] = values;
    return {applied_record::outcome::applied, security_kind::quota, {}};
}

applied_record apply_aws_key(security_snapshot& s, std::string_view user,
                             std::optional<std::string_view> value) {
    if (!valid_user_name(user)) {
        return invalid_record(security_kind::aws_key, "invalid user name");
    }
    if (!value) {
        s.aws_keys.erase(std::string(user));
        return {applied_record::outcome::applied, security_kind::aws_key, {}};
    }
    const auto fields = split_spaces(*value);
    std::optional<std::string> secret;
    if (fields.size() == 2) {
        secret = protocol::base64_decode(fields[1]);
    }
    if (fields.size() != 2 || !valid_access_key_id(fields[0]) || !secret || secret->empty()) {
        return invalid_record(security_kind::aws_key, "expected ACCESS_KEY_ID SECRET_BASE64");
    }
    for (const auto& [holder, k] : s.aws_keys) {
        if (holder != user && k.access_key_id == fields[0]) {
            return invalid_record(security_kind::aws_key,
                                  "access key id " + std::string(fields[0]) +
                                      " belongs to another user");
        }
    }
    s.aws_keys[std::string(user)] =
        aws_access_key{std::string(fields[0]), std::string(user), std::move(*secret)};
    return {applied_record::outcome::applied, security_kind::aws_key, {}};
}

}  // namespace

std::string_view to_string(security_kind k) {
    switch (k) {
        case security_kind::user:
            return "user";
        case security_kind::acl:
            return "acl";
        case security_kind::quota:
            return "quota";
        case security_kind::aws_key:
            return "aws-key";
    }
    return "unknown";
}

security_record user_record(const std::string& name, const user_credentials* creds) {
    security_record r{security_key(security_kind::user, name), std::nullopt};
    if (creds != nullptr) {
        r.value = format_user_credentials(*creds);
    }
    return r;
}

security_record acl_record(const acl_binding& b, bool present) {
    security_record r{security_key(security_kind::acl, acl_name_of(b)), std::nullopt};
    if (present) {
        r.value = std::string(acl_present);
    }
    return r;
}

security_record quota_record(const quota_entity& e, const quota_values* values) {
    security_record r{security_key(security_kind::quota, entity_part_text(e.user) + ' ' +
                                                             entity_part_text(e.client_id)),
                      std::nullopt};
    if (values != nullptr) {
        std::string v;
        for (std::size_t k = 0; k < quota_kind_count; ++k) {
            if ((*values)[k]) {
                if (!v.empty()) {
                    v += ' ';
                }
                v += std::string(security_quota_keys[k]) + "=" + security_number(*(*values)[k]);
            }
        }
        r.value = std::move(v);
    }
    return r;
}

security_record aws_key_record(const std::string& user, const aws_access_key* key) {
    security_record r{security_key(security_kind::aws_key, user), std::nullopt};
    if (key != nullptr) {
        r.value = key->access_key_id + " " + protocol::base64_encode(key->secret);
    }
    return r;
}

std::vector<security_record> security_diff(const security_snapshot& before,
                                           const security_snapshot& after) {
    std::vector<security_record> out;
    for (const auto& [name, creds] : after.users) {
        const auto it = before.users.find(name);
        if (it == before.users.end() || it->second != creds) {
            out.push_back(user_record(name, &creds));
        }
    }
    for (const auto& [name, creds] : before.users) {
        if (!after.users.contains(name)) {
            out.push_back(user_record(name, nullptr));
        }
    }
    for (const auto& b : after.acls) {
        if (!before.acls.contains(b)) {
            out.push_back(acl_record(b, true));
        }
    }
    for (const auto& b : before.acls) {
        if (!after.acls.contains(b)) {
            out.push_back(acl_record(b, false));
        }
    }
    for (const auto& [entity, values] : after.quotas) {
        const auto it = before.quotas.find(entity);
        if (it == before.quotas.end() || it->second != values) {
            out.push_back(quota_record(entity, &values));
        }
    }
    for (const auto& [entity, values] : before.quotas) {
        if (!after.quotas.contains(entity)) {
            out.push_back(quota_record(entity, nullptr));
        }
    }
    for (const auto& [user, key] : after.aws_keys) {
        const auto it = before.aws_keys.find(user);
        if (it == before.aws_keys.end() || it->second != key) {
            out.push_back(aws_key_record(user, &key));
        }
    }
    for (const auto& [user, key] : before.aws_keys) {
        if (!after.aws_keys.contains(user)) {
            out.push_back(aws_key_record(user, nullptr));
        }
    }
    return out;
}

applied_record apply_security_record(security_snapshot& s, std::string_view key,
                                     std::optional<std::string_view> value) {
    const auto colon = key.find(':');
    const std::string_view kind = key.substr(0, colon);
    const std::string_view name =
        colon == std::string_view::npos ? std::string_view{} : key.substr(colon + 1);
    if (colon != std::string_view::npos) {
        if (kind == to_string(security_kind::user)) {
            return apply_user(s, name, value);
        }
        if (kind == to_string(security_kind::acl)) {
            return apply_acl(s, name, value);
        }
        if (kind == to_string(security_kind::quota)) {
            return apply_quota(s, name, value);
        }
        if (kind == to_string(security_kind::aws_key)) {
            return apply_aws_key(s, name, value);
        }
    }
    // Printable in a log line: at most 32 bytes of the kind, others as '?'.
    std::string shown;
    for (const char c : kind.substr(0, 32)) {
        shown += (c > ' ' && c < 127) ? c : '?';
    }
    return {applied_record::outcome::unknown_kind, std::nullopt, shown};
}

}  // namespace sluice::auth
