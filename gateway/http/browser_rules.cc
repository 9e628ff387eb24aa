#include "gateway/http/browser_rules.h"

#include <string>

#include "gateway/http/rest/rest_support.h"
#include "gateway/httpcore/logger.h"

namespace sluice::gateway {
namespace http = boost::beast::http;

std::optional<http_response> check_browser_rules(const cors_policy& policy,
                                                 const http_request_context& ctx,
                                                 std::string_view pattern) {
    const std::string method(ctx.req.method_string());
    if (!policy.admits(ctx.req, ctx.tls)) {
        const std::string origin(first_header_value(ctx.req, "Origin"));
        http_log().info("{} {} from {} refused: origin {} is not allowed", method, ctx.path,
                        ctx.peer.address().to_string(), origin);
        std::string message = "origin " + origin +
                              " is not allowed: pages may call this server from its own origin "
                              "or from one listed in http.allowed.origins";
        if (pattern.starts_with("/v3/")) {
            return rest::v3_error(rest::code::forbidden, std::move(message));
        }
        if (pattern.starts_with("/topics") || pattern.starts_with("/consumers") ||
            pattern.starts_with("/brokers") || pattern == "/") {
            return rest::v2_error(rest::code::forbidden, std::move(message));
        }
        return error_response(403, message);
    }
    const auto verb = ctx.req.method();
    const bool changes_state = verb == http::verb::post || verb == http::verb::put ||
                               verb == http::verb::patch || verb == http::verb::delete_;
    if (changes_state && pattern.starts_with("/v1/")) {
        const auto it = ctx.req.find(http::field::content_type);
        const std::string_view type =
            it == ctx.req.end() ? std::string_view()
                                : std::string_view(it->value().data(), it->value().size());
        if (!is_json_media_type(type)) {
            http_log().debug("{} {} from {} refused: Content-Type '{}' is not JSON", method,
                             ctx.path, ctx.peer.address().to_string(), type);
            return error_response(
                415, method + " " + std::string(pattern) +
                         " needs Content-Type: application/json (got " +
                         (type.empty() ? std::string("none") : "'" + std::string(type) + "'") +
                         "); forms and text bodies are refused so that no page on another "
                         "origin can send this request");
        }
    }
    return std::nullopt;
}

}  // namespace sluice::gateway
