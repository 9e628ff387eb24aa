#include "gateway/httpcore/cors.h"

#include <algorithm>
#include <cctype>

#include "gateway/httpcore/logger.h"
#include "gateway/httpcore/request_framing.h"

namespace sluice::gateway {
namespace http = boost::beast::http;

namespace {

/// An origin taken apart; port 0 when the scheme has no default and none is given.
struct origin_parts {
    std::string scheme;
    std::string host;
    unsigned port = 0;
};

unsigned default_port(std::string_view scheme) {
    if (scheme == "http" || scheme == "ws") {
        return 80;
    }
    if (scheme == "https" || scheme == "wss") {
        return 443;
    }
    return 0;
}

std::string lower_ascii(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

/// "host", "host:port", "[v6]", "[v6]:port" -> host (lower case) and port (0: none given).
std::optional<std::pair<std::string, unsigned>> parse_authority(std::string_view a) {
    std::string_view host;
    std::string_view port;
    if (!a.empty() && a.front() == '[') {
        const auto close = a.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        host = a.substr(0, close + 1);
        const std::string_view after = a.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') {
                return std::nullopt;
            }
            port = after.substr(1);
        }
    } else {
        const auto colon = a.rfind(':');
        host = a.substr(0, colon);
        if (colon != std::string_view::npos) {
            port = a.substr(colon + 1);
        }
    }
    if (host.empty()) {
        return std::nullopt;
    }
    for (unsigned char c : host) {
        if (c <= ' ' || c >= 0x7f || c == '/' || c == '?' || c == '#' || c == '@' || c == ',' ||
            c == '\\') {
            return std::nullopt;
        }
    }
    unsigned n = 0;
    if (!port.empty()) {
        if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](unsigned char c) {
                return std::isdigit(c) != 0;
            })) {
            return std::nullopt;
        }
        n = static_cast<unsigned>(std::stoul(std::string(port)));
        if (n == 0 || n > 65535) {
            return std::nullopt;
        }
    }
    return std::pair{lower_ascii(host), n};
}

std::optional<origin_parts> parse_origin(std::string_view text) {
    text = trim_ows(text);
    if (!text.empty() && text.back() == '/') {
        text.remove_suffix(1);  // "https://app.example.com/" in a setting
    }
    const auto sep = text.find("://");
    if (sep == std::string_view::npos || sep == 0) {
        return std::nullopt;
    }
    const std::string_view scheme = text.substr(0, sep);
    if (!std::isalpha(static_cast<unsigned char>(scheme.front())) ||
        !std::all_of(scheme.begin(), scheme.end(), [](unsigned char c) {
            return std::isalnum(c) != 0 || c == '+' || c == '-' || c == '.';
        })) {
        return std::nullopt;
    }
    auto authority = parse_authority(text.substr(sep + 3));
    if (!authority) {
        return std::nullopt;
    }
    origin_parts out{lower_ascii(scheme), std::move(authority->first), authority->second};
    if (out.port == 0) {
        out.port = default_port(out.scheme);
    }
    return out;
}

std::string serialize(const origin_parts& o) {
    std::string out = o.scheme + "://" + o.host;
    if (o.port != 0 && o.port != default_port(o.scheme)) {
        out += ":" + std::to_string(o.port);
    }
    return out;
}

}  // namespace

std::string_view first_header_value(const http_request& req, std::string_view name) {
    const auto it = req.find(boost::beast::string_view(name.data(), name.size()));
    if (it == req.end()) {
        return {};
    }
    std::string_view v(it->value().data(), it->value().size());
    return trim_ows(v.substr(0, v.find(',')));
}

std::optional<std::string> normalize_origin(std::string_view text) {
    text = trim_ows(text);
    if (text == "*" || text == "null") {
        return std::string(text);
    }
    auto parts = parse_origin(text);
    if (!parts) {
        return std::nullopt;
    }
    return serialize(*parts);
}

std::optional<std::string> origin_of_url(std::string_view url) {
    const auto sep = url.find("://");
    if (sep == std::string_view::npos) {
        return std::nullopt;
    }
    const auto end = url.find_first_of("/?#", sep + 3);
    return normalize_origin(url.substr(0, end));
}

std::string cors_policy::allow(std::string_view origin) const {
    origin = trim_ows(origin);
    if (origin.empty()) {
        return {};
    }
    std::optional<std::string> normalized;
    for (const auto& o : allow_origins) {
        if (o == "*") {
            return "*";
        }
        if (!normalized) {
            normalized = normalize_origin(origin).value_or("");
        }
        if (o == *normalized) {
            return std::string(origin);
        }
    }
    return {};
}

bool cors_policy::admits(const http_request& req, bool tls) const {
    const auto it = req.find(http::field::origin);
    if (it == req.end()) {
        return true;  // not a browser's request on behalf of a page
    }
    const std::string_view origin(it->value().data(), it->value().size());
    if (!allow(origin).empty()) {
        return true;
    }
    const auto parts = parse_origin(origin);
    if (!parts || (parts->scheme != "http" && parts->scheme != "https")) {
        return false;  // "null" (a sandboxed or file: page) included, unless listed
    }
    if (std::find(own_origins.begin(), own_origins.end(), serialize(*parts)) !=
        own_origins.end()) {
        return true;
    }
    // A page served over TLS cannot have an http: origin; behind a proxy that ends TLS the
    // request comes in plain, so an https: origin is its own there.
    const bool scheme_fits = parts->scheme == "https" || !tls;
    // Behind a proxy, X-Forwarded-Host is the host the browser sent the request to.
    for (const std::string_view value :
         {first_header_value(req, "Host"), first_header_value(req, "X-Forwarded-Host")}) {
        if (value.empty()) {
            continue;
        }
        const auto authority = parse_authority(value);
        if (!authority || authority->first != parts->host) {
            continue;
        }
        const unsigned port = authority->second != 0 ? authority->second
                                                     : default_port(parts->scheme);
        if (scheme_fits && port == parts->port) {
            return true;
        }
        if (std::find(sibling_ports.begin(), sibling_ports.end(), parts->port) !=
            sibling_ports.end()) {
            return true;
        }
    }
    return false;
}

http_response cors_policy::preflight(const http_request& req, const std::string& allowed) const {
    http_response res{http::status::no_content, req.version()};
    res.set(http::field::access_control_allow_origin, allowed);
    res.set(http::field::access_control_allow_methods, allow_methods);
    res.set(http::field::access_control_allow_headers, allow_headers);
    res.set(http::field::access_control_max_age, "600");
    if (allowed != "*") {
        res.set(http::field::vary, "Origin");
    }
    res.prepare_payload();
    return res;
}

bool is_json_media_type(std::string_view content_type) {
    std::string type = lower_ascii(trim_ows(content_type.substr(0, content_type.find(';'))));
    return type == "application/json" || (type.starts_with("application/") &&
                                          type.ends_with("+json"));
}

}  // namespace sluice::gateway
