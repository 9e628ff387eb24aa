#include "gateway/http/rest/record_json.h"

#include <ctime>

#include <fmt/format.h>

namespace sluice::gateway::rest {
namespace {

/// A key or value in the request's embedded format, as the bytes to store (nullopt: null).
std::variant<std::optional<std::string>, record_error> data_of(const json::value* v,
                                                               bool json_values,
                                                               std::string_view what) {
    if (!v || v->IsNull()) {
        return std::optional<std::string>();
    }
    if (json_values) {
        auto text = json::to_stored_text(*v);
        if (!text) {
            return record_error{code::serialization,
                                "Error serializing message. " + std::string(what) +
                                    " holds a number out of the range of a double."};
        }
        return std::optional<std::string>(std::move(*text));
    }
    if (!v->IsString()) {
        return record_error{code::serialization,
                            "Error serializing message. " + std::string(what) + "=" +
                                json::to_string(*v) + " is not a base64 string."};
    }
    auto bytes = json::base64_bytes(*v);
    if (!bytes) {
        return record_error{code::serialization, "Error serializing message. " +
                                                     std::string(what) +
                                                     " is not a valid base64 string."};
    }
    return std::optional<std::string>(std::move(*bytes));
}

std::variant<std::optional<std::string>, record_error> read_data(const json::value* v,
                                                                 std::optional<data_info>& info) {
    if (!v || v->IsNull()) {
        return std::optional<std::string>();
    }
    if (!v->IsObject()) {
        return record_error{code::bad_request, "key and value must be objects {\"type\", \"data\"}"};
    }
    auto type = json::get_string(*v, "type");
    if (!type) {
        return record_error{code::bad_request, "Bad Request: records without a type need a schema registry, "
                                 "which sluice does not have; use BINARY, JSON or STRING"};
    }
    const json::value* data = json::member(*v, "data");
    std::optional<std::string> bytes;
    if (*type == "BINARY") {
        if (data && !data->IsNull()) {
            if (!data->IsString()) {
                return record_error{code::bad_request, "Bad Request: data=" + json::to_string(*data) +
                                             " is not a base64 string."};
            }
            bytes = json::base64_bytes(*data);
            if (!bytes) {
                return record_error{code::bad_request, "Bad Request: data=" + json::to_string(*data) +
                                             " is not a valid base64 string."};
            }
        }
    } else if (*type == "JSON") {
        if (data) {
            auto text = json::to_stored_text(*data);
            if (!text) {
                return record_error{code::bad_request, "Bad Request: data holds a number out of the range of a "
                                         "double."};
            }
            bytes = std::move(*text);
        }
    } else if (*type == "STRING") {
        if (data && !data->IsNull()) {
            if (!data->IsString()) {
                return record_error{code::bad_request, "Bad Request: data=" + json::to_string(*data) +
                                             " is not a string."};
            }
            bytes = std::string(json::as_view(*data));
        }
    } else if (*type == "AVRO" || *type == "JSONSCHEMA" || *type == "PROTOBUF") {
        return record_error{code::bad_request, "Bad Request: " + std::string(*type) +
                                     " needs a schema registry, which sluice does not have"};
    } else {
        return record_error{code::bad_request, "Bad Request: unknown type " + std::string(*type)};
    }
    info = data_info{std::string(*type), bytes ? bytes->size() : 0};
    return bytes;
}

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
    if (pos + n > s.size()) {
        return false;
    }
    out = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        out = out * 10 + (s[i] - '0');
    }
    return true;
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

}  // namespace

std::optional<std::string> read_headers(const json::value& v, outgoing_record& out) {
    if (!v.IsArray()) {
        return "headers must be an array of {\"name\", \"value\"}";
    }
    for (const auto& h : v.GetArray()) {
        auto name = json::get_string(h, "name");
        if (!name) {
            return "every header needs a string name";
        }
        const json::value* value = json::member(h, "value");
        if (!value || value->IsNull()) {
            out.headers.emplace_back(std::string(*name), std::nullopt);
            continue;
        }
        if (!value->IsString()) {
            return "header " + std::string(*name) + ": the value must be a base64 string";
        }
        auto bytes = json::base64_bytes(*value);
        if (!bytes) {
            return "header " + std::string(*name) + ": the value is not valid base64";
        }
        out.headers.emplace_back(std::string(*name), std::move(*bytes));
    }
    return std::nullopt;
}

std::optional<std::int64_t> read_timestamp(const json::value& v) {
    if (v.IsInt64() && v.GetInt64() >= 0) {
        return v.GetInt64();
    }
    if (v.IsString()) {
        return parse_timestamp(json::as_view(v));
    }
    return std::nullopt;
}

std::variant<outgoing_record, record_error> read_v2_record(
    const json::value& r, bool json_values, std::optional<std::int32_t> url_partition) {
    if (!r.IsObject()) {
        return record_error{code::invalid_payload, "Payload error. Every record must be an object"};
    }
    outgoing_record o;
    auto key = data_of(json::member(r, "key"), json_values, "key");
    if (auto* e = std::get_if<record_error>(&key)) {
        return std::move(*e);
    }
    o.key = std::move(std::get<0>(key));
    auto value = data_of(json::member(r, "value"), json_values, "value");
    if (auto* e = std::get_if<record_error>(&value)) {
        return std::move(*e);
    }
    o.value = std::move(std::get<0>(value));
    if (const auto* p = json::member(r, "partition"); p && !p->IsNull()) {
        if (!p->IsInt() || p->GetInt() < 0) {
            return record_error{code::invalid_payload,
                                "Payload error. partition must be a non-negative integer"};
        }
        o.partition = p->GetInt();
    } else {
        o.partition = url_partition;
    }
    if (const auto* h = json::member(r, "headers"); h && !h->IsNull()) {
        if (auto why = read_headers(*h, o)) {
            return record_error{code::invalid_payload, "Payload error. " + *why};
        }
    }
    if (const auto* t = json::member(r, "timestamp"); t && !t->IsNull()) {
        auto ts = read_timestamp(*t);
        if (!ts) {
            return record_error{code::invalid_payload,
                                "Payload error. timestamp must be milliseconds since the epoch "
                                "or an RFC 3339 date-time"};
        }
        o.timestamp = *ts;
    }
    return o;
}

std::variant<v3_record, record_error> read_v3_record(const json::value& v) {
    if (!v.IsObject()) {
        return record_error{code::bad_request, "Cannot deserialize a record from " + json::to_string(v)};
    }
    v3_record out;
    if (const auto* p = json::member(v, "partition_id"); p && !p->IsNull()) {
        if (!p->IsInt() || p->GetInt() < 0) {
            return record_error{code::bad_request, "partition_id must be a non-negative integer"};
        }
        out.record.partition = p->GetInt();
    }
    if (const auto* h = json::member(v, "headers"); h && !h->IsNull()) {
        if (auto why = read_headers(*h, out.record)) {
            return record_error{code::bad_request, "Bad Request: " + *why};
        }
    }
    auto key = read_data(json::member(v, "key"), out.key);
    if (auto* e = std::get_if<record_error>(&key)) {
        return *e;
    }
    out.record.key = std::move(std::get<0>(key));
    auto value = read_data(json::member(v, "value"), out.value);
    if (auto* e = std::get_if<record_error>(&value)) {
        return *e;
    }
    out.record.value = std::move(std::get<0>(value));
    if (const auto* t = json::member(v, "timestamp"); t && !t->IsNull()) {
        auto ts = read_timestamp(*t);
        if (!ts) {
            return record_error{code::bad_request, "timestamp must be an RFC 3339 date-time"};
        }
        out.record.timestamp = *ts;
    }
    return out;
}

std::optional<std::int64_t> parse_timestamp(std::string_view s) {
    int year, month, day, hour, minute, second;
    if (!digits(s, 0, 4, year) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, month) ||
        s[7] != '-' || !digits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        !digits(s, 11, 2, hour) || s[13] != ':' || !digits(s, 14, 2, minute) || s[16] != ':' ||
        !digits(s, 17, 2, second)) {
        return std::nullopt;
    }
    if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 ||
        second > 60) {
        return std::nullopt;
    }
    std::size_t i = 19;
    std::int64_t millis = 0;
    if (i < s.size() && s[i] == '.') {
        ++i;
        int n = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            if (n < 3) {
                millis = millis * 10 + (s[i] - '0');
            }
            ++n;
            ++i;
        }
        if (n == 0) {
            return std::nullopt;
        }
        for (; n < 3; ++n) {
            millis *= 10;
        }
    }
    std::int64_t offset_minutes = 0;
    if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
        ++i;
    } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
        int oh, om;
        if (!digits(s, i + 1, 2, oh) || i + 3 >= s.size() || s[i + 3] != ':' ||
            !digits(s, i + 4, 2, om)) {
            return std::nullopt;
        }
        offset_minutes = (oh * 60 + om) * (s[i] == '-' ? -1 : 1);
        i += 6;
    } else {
        return std::nullopt;
    }
    if (i != s.size()) {
        return std::nullopt;
    }
    const std::int64_t days =
        days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
    const std::int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    return secs * 1000 + millis;
}

std::string format_timestamp(std::int64_t ms) {
    std::int64_t secs = ms / 1000;
    std::int64_t millis = ms % 1000;
    if (millis < 0) {
        millis += 1000;
        --secs;
    }
    const std::time_t t = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
}

}  // namespace sluice::gateway::rest
