// Which browser origins the HTTP and SQS fronts serve, and the cross-origin resource sharing
// (CORS) answers for them (owned by gateway/httpcore). One list decides both: http.allowed.origins
// together with access.control.allow.origin (the REST Proxy's name, kept for its users).
//
// A request that carries an Origin header was sent by a browser on behalf of a page. It is
// served when that origin is the request's own (the scheme, host and port it was sent to: the
// Host header, or X-Forwarded-Host behind a proxy), the front's advertised URL, another sluice
// listener on the same host (the SQS front admits the console's origin), or in the list; any
// other origin is refused with 403 before authentication, a WebSocket upgrade or a stream.
// Requests without an Origin header (curl, SDKs, Kafka tools) are not browsers' and pass.
// A page cannot forge the Origin its browser sends, nor, without a CORS preflight that only
// listed origins pass, add headers such as X-Forwarded-Host.
//
// Cross-origin answers: every answer to a request from a listed origin carries
// Access-Control-Allow-Origin, and preflight requests (OPTIONS with
// Access-Control-Request-Method) from a listed origin are answered 204 by the connection
// without reaching a route. Read-only after start-up; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/httpcore/router.h"

namespace sluice::gateway {

/// "https://app.example.com:8443" as browsers serialize an origin: scheme and host in lower
/// case, the port only when it is not the scheme's default. Nullopt for anything else (a path,
/// user info, no host); "null" and "*" stay as they are.
std::optional<std::string> normalize_origin(std::string_view text);
/// The origin of a URL ("https://lb.example.com/kafka" -> "https://lb.example.com"); nullopt
/// when the URL has no usable origin.
std::optional<std::string> origin_of_url(std::string_view url);

struct cors_policy {
    /// http.allowed.origins and access.control.allow.origin, normalized: "*" or origins
    /// ("https://app.example.com"); empty: only the requests' own origins (and CORS off).
    std::vector<std::string> allow_origins;
    /// Origins served like the request's own (the advertised URL's), normalized.
    std::vector<std::string> own_origins;
    /// Ports of sluice's other listeners: an origin on the request's host with one of these
    /// ports is sluice's own page (the SQS front lists the HTTP listener's port).
    std::vector<std::uint16_t> sibling_ports;
    /// access.control.allow.methods, access.control.allow.headers.
    std::string allow_methods = "GET,POST,PUT,DELETE,HEAD,OPTIONS";
    std::string allow_headers = "origin,content-type,accept,authorization,last-event-id";

    /// CORS answers are given (some origin is listed).
    bool enabled() const { return !allow_origins.empty(); }
    /// The Access-Control-Allow-Origin value for a request's Origin: the origin as sent, or
    /// "*"; empty when it is not listed.
    std::string allow(std::string_view origin) const;
    /// True when the request may be served: it has no Origin header, or its origin is its
    /// own, a sibling's, or allowed. `tls`: the request came over TLS.
    bool admits(const http_request& req, bool tls) const;
    /// The answer to a preflight request from an allowed origin (`allowed` from allow()).
    http_response preflight(const http_request& req, const std::string& allowed) const;
};

/// The Content-Type is JSON: application/json or a type ending in "+json" (parameters aside).
bool is_json_media_type(std::string_view content_type);

/// The first value of a header that proxies may have appended to ("a, b"), trimmed; empty when
/// the header is absent.
std::string_view first_header_value(const http_request& req, std::string_view name);

}  // namespace sluice::gateway
