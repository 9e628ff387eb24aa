#include "gateway/http/rest/rest_support.h"

#include <charconv>

#include <boost/beast/http/field.hpp>
#include <fmt/format.h>

#include "gateway/httpcore/logger.h"
#include "gateway/policy/audit.h"

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

http_response report_denied(const http_request_context& ctx, const acl_check& denied, bool v2) {
    const std::string action = std::string(ctx.req.method_string()) + " " + ctx.path;
    http_log().info("{} by {} from {} denied: {}", action, ctx.principal, acl_host(ctx),
                    denial_message(denied));
    audit_authorization_denied(audit_source{ctx.principal, audit_client_of(ctx.peer), "http"},
                               denied.op, denied.type, denied.name, action);
    return acl_denied(denied, v2);
}

producer_identity producer_of(const rest_context& rc, const http_request_context& ctx) {
    return producer_identity{rc.acl, ctx.principal, acl_host(ctx), "http"};
}

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

}  // namespace sluice::gateway::rest
