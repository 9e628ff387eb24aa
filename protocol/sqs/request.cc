#include "protocol/sqs/request.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "protocol/core/base64.h"

namespace sluice::protocol::sqs {
namespace {

constexpr const char* invalid_parameter = "InvalidParameterValue";

std::optional<std::int64_t> parse_digits(std::string_view s) {
    std::int64_t v = 0;
    if (s.empty()) {
        return std::nullopt;
    }
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) {
        return std::nullopt;
    }
    return v;
}

}  // namespace

request_view request_view::of_json(const rapidjson::Value& object) {
    request_view v;
    v.wire_ = wire::json;
    v.json_ = &object;
    return v;
}

request_view request_view::of_query(const form_fields& fields) {
    request_view v;
    v.wire_ = wire::query;
    v.fields_ = &fields;
    return v;
}

void request_view::fail(std::string code, std::string message) const {
    if (!*error_) {
        *error_ = param_error{std::move(code), std::move(message)};
    }
}

const rapidjson::Value* request_view::member_value(std::string_view member) const {
    if (json_ == nullptr || !json_->IsObject()) {
        return nullptr;
    }
    auto it = json_->FindMember(rapidjson::Value(rapidjson::StringRef(member.data(), member.size())));
    if (it == json_->MemberEnd() || it->value.IsNull()) {
        return nullptr;
    }
    return &it->value;
}

std::optional<std::string> request_view::query_value(const std::string& name) const {
    auto it = fields_->find(name);
    if (it == fields_->end()) {
        return std::nullopt;
    }
    return it->second;
}

bool request_view::has(std::string_view member) const {
    if (wire_ == wire::json) {
        return member_value(member) != nullptr;
    }
    return has_prefix_field(prefix_ + std::string(member));
}

bool request_view::has_prefix_field(const std::string& name) const {
    if (fields_->contains(name)) {
        return true;
    }
    const std::string head = name + ".";
    auto it = fields_->lower_bound(head);
    return it != fields_->end() && it->first.compare(0, head.size(), head) == 0;
}

std::optional<std::string> request_view::string(std::string_view member) const {
    if (wire_ == wire::query) {
        return query_value(prefix_ + std::string(member));
    }
    const auto* v = member_value(member);
    if (v == nullptr) {
        return std::nullopt;
    }
    if (!v->IsString()) {
        fail(invalid_parameter, "The parameter " + std::string(member) + " must be a string.");
        return std::nullopt;
    }
    return std::string(v->GetString(), v->GetStringLength());
}

std::optional<std::int64_t> request_view::integer(std::string_view member) const {
    if (wire_ == wire::json) {
        const auto* v = member_value(member);
        if (v == nullptr) {
            return std::nullopt;
        }
        if (v->IsInt64()) {
            return v->GetInt64();
        }
        if (v->IsString()) {
            if (auto n = parse_digits(std::string_view(v->GetString(), v->GetStringLength()))) {
                return n;
            }
        }
        fail(invalid_parameter, "The parameter " + std::string(member) + " must be an integer.");
        return std::nullopt;
    }
    auto s = string(member);
    if (!s) {
        return std::nullopt;
    }
    auto n = parse_digits(*s);
    if (!n) {
        fail(invalid_parameter,
             "Value " + *s + " for parameter " + std::string(member) + " is invalid. Reason: not an integer.");
    }
    return n;
}

std::vector<std::pair<std::uint64_t, std::string>> request_view::query_indexes(
    std::string_view name) const {
    const std::string head = prefix_ + std::string(name) + ".";
    std::set<std::uint64_t> seen;
    std::vector<std::pair<std::uint64_t, std::string>> out;
    for (auto it = fields_->lower_bound(head);
         it != fields_->end() && it->first.compare(0, head.size(), head) == 0; ++it) {
        const std::string_view rest = std::string_view(it->first).substr(head.size());
        const std::string_view digits = rest.substr(0, rest.find('.'));
        std::uint64_t n = 0;
        auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
        if (ec != std::errc() || p != digits.data() + digits.size() || n == 0) {
            fail(invalid_parameter, "The parameter " + it->first + " has no valid index.");
            continue;
        }
        if (seen.insert(n).second) {
            out.emplace_back(n, head + std::string(digits));
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::string> request_view::string_list(std::string_view member,
                                                   std::string_view query_item) const {
    std::vector<std::string> out;
    if (wire_ == wire::query) {
        for (const auto& [n, name] : query_indexes(query_item)) {
            if (auto v = query_value(name)) {
                out.push_back(*v);
            } else {
                fail(invalid_parameter, "The parameter " + name + " must be a string.");
            }
        }
        return out;
    }
    const auto* v = member_value(member);
    if (v == nullptr) {
        return out;
    }
    if (!v->IsArray()) {
        fail(invalid_parameter, "The parameter " + std::string(member) + " must be a list.");
        return out;
    }
    for (const auto& item : v->GetArray()) {
        if (!item.IsString()) {
            fail(invalid_parameter, "The parameter " + std::string(member) + " must hold strings.");
            return {};
        }
        out.emplace_back(item.GetString(), item.GetStringLength());
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> request_view::string_map(
    std::string_view member, std::string_view query_entry, std::string_view key,
    std::string_view value) const {
    std::vector<std::pair<std::string, std::string>> out;
    if (wire_ == wire::query) {
        for (const auto& [n, name] : query_indexes(query_entry)) {
            auto k = query_value(name + "." + std::string(key));
            auto v = query_value(name + "." + std::string(value));
            if (!k || !v) {
                fail(invalid_parameter,
                     "The parameter " + name + " needs both ." + std::string(key) + " and ." +
                         std::string(value) + ".");
                continue;
            }
            out.emplace_back(std::move(*k), std::move(*v));
        }
        return out;
    }
    const auto* v = member_value(member);
    if (v == nullptr) {
        return out;
    }
    if (!v->IsObject()) {
        fail(invalid_parameter, "The parameter " + std::string(member) + " must be a map.");
        return out;
    }
    for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
        if (!it->value.IsString()) {
            fail(invalid_parameter,
                 "The parameter " + std::string(member) + " must map strings to strings.");
            return {};
        }
        out.emplace_back(std::string(it->name.GetString(), it->name.GetStringLength()),
                         std::string(it->value.GetString(), it->value.GetStringLength()));
    }
    return out;
}

std::vector<std::pair<std::string, attribute_value>> request_view::attribute_map(
    std::string_view member, std::string_view query_entry) const {
    std::vector<std::pair<std::string, attribute_value>> out;
    auto decode_binary = [&](const std::string& text, const std::string& where) {
        auto raw = base64_decode(text);
        if (!raw) {
            fail(invalid_parameter, "The BinaryValue of " + where + " is not valid base64.");
        }
        return raw;
    };
    if (wire_ == wire::query) {
        for (const auto& [n, name] : query_indexes(query_entry)) {
            auto k = query_value(name + ".Name");
            if (!k) {
                fail(invalid_parameter, "The parameter " + name + ".Name is missing.");
                continue;
            }
            attribute_value a;
            a.data_type = query_value(name + ".Value.DataType").value_or("");
            a.string_value = query_value(name + ".Value.StringValue");
            if (auto b = query_value(name + ".Value.BinaryValue")) {
                a.binary_value = decode_binary(*b, *k);
            }
            a.has_list_values = has_prefix_field(name + ".Value.StringListValue") ||
                                has_prefix_field(name + ".Value.BinaryListValue");
            out.emplace_back(std::move(*k), std::move(a));
        }
        return out;
    }
    const auto* v = member_value(member);
    if (v == nullptr) {
        return out;
    }
    if (!v->IsObject()) {
        fail(invalid_parameter, "The parameter " + std::string(member) + " must be a map.");
        return out;
    }
    for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
        const std::string name(it->name.GetString(), it->name.GetStringLength());
        if (!it->value.IsObject()) {
            fail(invalid_parameter, "The value of message attribute " + name + " must be a structure.");
            return {};
        }
        const auto sub = of_json(it->value);
        attribute_value a;
        a.data_type = sub.string("DataType").value_or("");
        a.string_value = sub.string("StringValue");
        if (auto b = sub.string("BinaryValue")) {
            a.binary_value = decode_binary(*b, name);
        }
        a.has_list_values = sub.has("StringListValues") || sub.has("BinaryListValues");
        if (sub.error()) {
            fail(sub.error()->code, sub.error()->message);
        }
        out.emplace_back(name, std::move(a));
    }
    return out;
}

std::vector<request_view> request_view::entries(std::string_view member,
                                                std::string_view query_entry) const {
    std::vector<request_view> out;
    if (wire_ == wire::query) {
        for (const auto& [n, name] : query_indexes(query_entry)) {
            request_view e = *this;
            e.prefix_ = name + ".";
            out.push_back(std::move(e));
        }
        return out;
    }
    const auto* v = member_value(member);
    if (v == nullptr) {
        return out;
    }
    if (!v->IsArray()) {
        fail(invalid_parameter, "The parameter " + std::string(member) + " must be a list.");
        return out;
    }
    for (const auto& item : v->GetArray()) {
        if (!item.IsObject()) {
            fail(invalid_parameter, "The entries of " + std::string(member) + " must be structures.");
            return {};
        }
        request_view e = *this;
        e.json_ = &item;
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace sluice::protocol::sqs
