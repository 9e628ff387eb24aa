// The checks of a message being sent (send_checks.h).
#include "backend/queue/send_checks.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "backend/queue/message_codec.h"
#include "backend/queue/queue_errors.h"

namespace sluice::backend::queue {
using api::backend_error;
using api::errc;

namespace {

std::string sha256_hex(std::string_view data) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
    std::string out;
    out.reserve(n * 2);
    for (unsigned int i = 0; i < n; ++i) {
        out += fmt::format("{:02x}", md[i]);
    }
    return out;
}

/// MessageGroupId and MessageDeduplicationId: 1-128 of alphanumerics and punctuation.
bool valid_token(const std::string& s) {
    return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= '!' && c <= '~');
    });
}

/// SQS's Number: a sign, up to 38 significant digits, an optional exponent, and a magnitude
/// between 10^-128 and 10^126.
bool valid_number(std::string_view s) {
    std::size_t i = 0;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
        ++i;
    }
    std::string digits;
    bool dot = false;
    std::int64_t point_shift = 0;  // digits after the point
    bool any = false;
    for (; i < s.size(); ++i) {
        const char c = s[i];
        if (c >= '0' && c <= '9') {
            any = true;
            if (!(digits.empty() && c == '0')) {
                digits.push_back(c);
            }
            if (dot) {
                ++point_shift;
            }
        } else if (c == '.' && !dot) {
            dot = true;
        } else {
            break;
        }
    }
    if (!any) {
        return false;
    }
    std::int64_t exponent = 0;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        bool neg = false;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
            neg = s[i] == '-';
            ++i;
        }
        const auto* begin = s.data() + i;
        auto [p, ec] = std::from_chars(begin, s.data() + s.size(), exponent);
        if (ec != std::errc() || p == begin) {
            return false;
        }
        i = static_cast<std::size_t>(p - s.data());
        exponent = neg ? -exponent : exponent;
    }
    if (i != s.size()) {
        return false;
    }
    while (!digits.empty() && digits.back() == '0') {
        digits.pop_back();
        --point_shift;
    }
    if (digits.empty()) {
        return true;  // zero
    }
    if (digits.size() > 38) {
        return false;
    }
    // value = 0.d1d2... x 10^magnitude
    const std::int64_t magnitude = exponent - point_shift + static_cast<std::int64_t>(digits.size());
    return magnitude - 1 >= -128 && magnitude - 1 <= 126;
}

backend_error check_attributes(const std::vector<api::message_attribute>& attrs) {
    if (attrs.size() > max_message_attributes) {
        return invalid(fmt::format("Number of message attributes [{}] exceeds the allowed maximum [{}].",
                                   attrs.size(), max_message_attributes));
    }
    std::set<std::string_view> names;
    for (const auto& a : attrs) {
        if (!valid_attribute_name(a.name)) {
            return invalid(fmt::format("Message (user) attribute name '{}' is invalid.", a.name));
        }
        if (!names.insert(a.name).second) {
            return invalid(fmt::format("Message (user) attribute name '{}' is given twice.", a.name));
        }
        const std::string_view type = a.data_type;
        std::string_view base = type.substr(0, type.find('.'));
        const bool known = base == "String" || base == "Number" || base == "Binary";
        const bool label_ok = base.size() == type.size() ||
                              (type.size() > base.size() + 1 &&
                               valid_message_text(type.substr(base.size() + 1)));
        if (!known || !label_ok || type.size() > 256) {
            return invalid(fmt::format(
                "The type of message (user) attribute '{}' is invalid. You must use only the "
                "following supported type prefixes: Binary, Number, String.",
                a.name));
        }
        if (a.value.empty()) {
            return invalid(fmt::format(
                "Message (user) attribute '{}' must contain a non-empty value of type '{}'.",
                a.name, base));
        }
        if (base != "Binary" && !valid_message_text(a.value)) {
            return {make_error_code(errc::invalid_message_contents),
                    fmt::format("Message (user) attribute '{}' holds characters outside the "
                                "allowed set.",
                                a.name)};
        }
        if (base == "Number" && !valid_number(a.value)) {
            return invalid(fmt::format(
                "Can't cast the value of message (user) attribute '{}' to a number.", a.name));
        }
    }
    return {};
}

}  // namespace

prepared prepare(const queue_config& c, api::outgoing_message& m, std::int64_t now) {
    prepared p;
    if (m.body.empty()) {
        p.error = {make_error_code(errc::missing_parameter),
                   "The request must contain the parameter MessageBody."};
        return p;
    }
    if (!valid_message_text(m.body)) {
        p.error = {make_error_code(errc::invalid_message_contents),
                   "Invalid binary character was found in the message body, the set of allowed "
                   "characters is #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 "
                   "to #x10FFFF"};
        return p;
    }
    if (auto err = check_attributes(m.attributes); err.code) {
        p.error = err;
        return p;
    }
    std::size_t size = m.body.size();
    for (const auto& a : m.attributes) {
        size += a.name.size() + a.data_type.size() + a.value.size();
    }
    if (static_cast<std::int64_t>(size) > c.maximum_message_size) {
        p.error = invalid(fmt::format(
            "One or more parameters are invalid. Reason: Message must be shorter than {} bytes.",
            c.maximum_message_size));
        return p;
    }
    for (const auto& a : m.system_attributes) {
        if (a.name != "AWSTraceHeader" || a.data_type != "String" || a.value.empty()) {
            p.error = invalid(fmt::format(
                "Message system attribute name '{}' is invalid (AWSTraceHeader of type String "
                "only).",
                a.name));
            return p;
        }
        p.trace = a.value;
    }
    if (m.group_id && !valid_token(*m.group_id)) {
        p.error = invalid(fmt::format("Value {} for parameter MessageGroupId is invalid.", *m.group_id));
        return p;
    }
    if (m.deduplication_id && !valid_token(*m.deduplication_id)) {
        p.error = invalid(fmt::format("Value {} for parameter MessageDeduplicationId is invalid.",
                                      *m.deduplication_id));
        return p;
    }
    if (m.delay && (m.delay->count() < 0 || m.delay->count() > max_delay_s)) {
        p.error = invalid(fmt::format(
            "Value {} for parameter DelaySeconds is invalid. Reason: must be between 0 and 900.",
            m.delay->count()));
        return p;
    }
    if (c.fifo) {
        if (!m.group_id) {
            p.error = {make_error_code(errc::missing_parameter),
                       "The request must contain the parameter MessageGroupId."};
            return p;
        }
        if (m.delay && m.delay->count() > 0) {
            p.error = invalid(fmt::format(
                "Value {} for parameter DelaySeconds is invalid. Reason: The request include "
                "parameter that is not valid for this queue type.",
                m.delay->count()));
            return p;
        }
        if (!m.deduplication_id) {
            if (!c.content_based_deduplication) {
                p.error = invalid(
                    "The queue should either have ContentBasedDeduplication enabled or "
                    "MessageDeduplicationId provided explicitly");
                return p;
            }
            m.deduplication_id = sha256_hex(m.body);
        }
        p.dedup_key = c.deduplicate_per_group ? *m.group_id + '\n' + *m.deduplication_id
                                              : *m.deduplication_id;
    } else if (m.deduplication_id) {
        p.error = invalid(
            "The request include parameter MessageDeduplicationId that is not valid for this "
            "queue type");
        return p;
    }
    const std::int64_t delay_s = m.delay ? m.delay->count() : c.delay_s;
    p.visible_from_ms = delay_s > 0 ? now + delay_s * 1000 : 0;
    return p;
}

api::backend_error not_stored(const api::backend_error& e) {
    const auto why = api::reason(e);
    if (why == api::errc::message_too_large || why == api::errc::record_list_too_large) {
        return invalid(
            "The message is larger than the queue's topic accepts (max.message.bytes).");
    }
    return api::backend_error{api::make_error_code(api::errc::storage_error),
                              fmt::format("The message could not be stored: {}", e.message)};
}

}  // namespace sluice::backend::queue
