#include "gateway/http/rest/rest_support.h"

#include <charconv>
#include <ctime>

#include <boost/beast/http/field.hpp>
#include <fmt/format.h>

namespace sluice::gateway::rest {
namespace http = boost::beast::http;

std::string_view header(const http_request& req, std::string_view name) {
    const auto it = req.find(boost::beast::string_view(name.data(), name.size()));
    if (it == req.end()) {
        return {};
    }
    return {it->value().data(), it->value().size()};
}

std::string base_url(const http_request_context& ctx, const http_settings& settings) {
    if (!settings.advertised_url.empty()) {
        return settings.advertised_url;
    }
    // Behind a proxy or load balancer, the address the client used.
    std::string_view host = header(ctx.req, "X-Forwarded-Host");
    if (const auto comma = host.find(','); comma != std::string_view::npos) {
        host = host.substr(0, comma);
    }
    if (host.empty()) {
        host = header(ctx.req, "Host");
    }
    std::string_view proto = header(ctx.req, "X-Forwarded-Proto");
    if (const auto comma = proto.find(','); comma != std::string_view::npos) {
        proto = proto.substr(0, comma);
    }
    if (proto != "https" && proto != "http") {
        proto = ctx.tls ? "https" : "http";  // no (or no usable) X-Forwarded-Proto
    }
    if (host.empty()) {
        return fmt::format("{}://{}:{}", proto, ctx.peer.address().to_string(), ctx.peer.port());
    }
    return fmt::format("{}://{}", proto, host);
}

std::string url_segment(std::string_view s) {
    std::string out;
    for (unsigned char c : s) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(static_cast<char>(c));
        } else {
            out += fmt::format("%{:02X}", c);
        }
    }
    return out;
}

http_response json_response(unsigned status, std::string_view content_type, std::string body) {
    return make_response({status, std::string(content_type), std::move(body)});
}

http_response v2_error(code c, std::string message) {
    return error_response(error{c, std::move(message)}, v2_json);
}

http_response acl_denied(const acl_check& denied, bool v2) {
    return v2 ? v2_error(code::forbidden, denial_message(denied))
              : v3_error(code::forbidden, denial_message(denied));
}

std::string acl_host(const http_request_context& ctx) { return ctx.peer.address().to_string(); }

http_response v3_error(code c, std::string message) {
    return error_response(error{c, std::move(message)}, "application/json");
}

std::optional<http_response> parse_body(const http_request& req, json::document& doc,
                                        std::string_view content_type, bool empty_is_object) {
    const std::string& body = req.body();
    std::string_view text = body;
    while (!text.empty() && (text.front() == ' ' || text.front() == '\n' || text.front() == '\r' ||
                             text.front() == '\t')) {
        text.remove_prefix(1);
    }
    if (text.empty() && empty_is_object) {
        doc.SetObject();
        return std::nullopt;
    }
    if (auto why = json::parse(body, doc)) {
        return error_response(error{code::bad_request, "Malformed JSON: " + *why}, content_type);
    }
    return std::nullopt;
}

std::optional<http_response> parse_body_in_place(http_request& req, json::document& doc,
                                                 std::string_view content_type) {
    if (auto why = json::parse_in_place(req.body(), doc)) {
        return error_response(error{code::bad_request, "Malformed JSON: " + *why}, content_type);
    }
    return std::nullopt;
}

std::optional<std::int32_t> parse_partition(std::string_view text) {
    std::int32_t v = 0;
    if (text.empty() || text.size() > 10) {
        return std::nullopt;
    }
    for (char c : text) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
    }
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size()) {
        return std::nullopt;
    }
    return v;
}

namespace {

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
