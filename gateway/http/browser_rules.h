// The HTTP front's browser rules (owned by gateway/http): what its guard checks on a browser's
// request before authentication, over the origin list of gateway/httpcore/cors.h.
#pragma once

#include <optional>
#include <string_view>

#include "gateway/httpcore/cors.h"
#include "gateway/httpcore/router.h"

namespace sluice::gateway {

/// The HTTP front's browser rules, run by its guard before authentication for every matched
/// route (`pattern` is the route's): 403 for a request whose Origin is not admitted (the REST
/// Proxy's body with 40301 on its routes), and 415 for a state-changing console or /v1 request
/// (POST, PUT, PATCH, DELETE) whose Content-Type is not JSON, which is what keeps those from
/// being CORS "simple requests" that a page on any origin can send without asking. Nullopt
/// lets the request through.
std::optional<http_response> check_browser_rules(const cors_policy& policy,
                                                 const http_request_context& ctx,
                                                 std::string_view pattern);

}  // namespace sluice::gateway
