#include "gateway/http/cors.h"

namespace sluice::gateway {
namespace http = boost::beast::http;

std::string cors_policy::allow(std::string_view origin) const {
    if (origin.empty()) {
        return {};
    }
    for (const auto& o : allow_origins) {
        if (o == "*") {
            return "*";
        }
        if (o == origin) {
            return o;
        }
    }
    return {};
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

}  // namespace sluice::gateway
