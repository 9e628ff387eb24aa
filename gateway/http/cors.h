// Cross-origin resource sharing for the HTTP front (owned by gateway/http): off unless
// access.control.allow.origin names origins. When on, every answer to a request with an
// allowed Origin carries Access-Control-Allow-Origin, and preflight requests (OPTIONS with
// Access-Control-Request-Method) are answered 204 by the connection without reaching a route.
// Read-only after start-up; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/router.h"

namespace sluice::gateway {

struct cors_policy {
    /// access.control.allow.origin: "*" or origins ("https://app.example.com"); empty = off.
    std::vector<std::string> allow_origins;
    /// access.control.allow.methods, access.control.allow.headers.
    std::string allow_methods = "GET,POST,PUT,DELETE,HEAD,OPTIONS";
    std::string allow_headers = "origin,content-type,accept,authorization,last-event-id";

    bool enabled() const { return !allow_origins.empty(); }
    /// The Access-Control-Allow-Origin value for a request's Origin; empty when not allowed.
    std::string allow(std::string_view origin) const;
    /// The answer to a preflight request from an allowed origin (`allowed` from allow()).
    http_response preflight(const http_request& req, const std::string& allowed) const;
};

}  // namespace sluice::gateway
