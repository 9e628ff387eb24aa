// What the front unit tests share (tests/gateway): a request through a router without a
// socket, and its JSON answer parsed. The fronts stand on fake_backend.h underneath.
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "gateway/http/json.h"
#include "gateway/httpcore/router.h"

namespace sluice::gateway::testing {

/// A request with a body, its Content-Type (when not empty) and Host: localhost:8082.
inline http_request make_request(boost::beast::http::verb method, std::string target,
                                 std::string body = {}, std::string content_type = {}) {
    http_request req{method, target, 11};
    req.set(boost::beast::http::field::host, "localhost:8082");
    if (!content_type.empty()) {
        req.set(boost::beast::http::field::content_type, content_type);
    }
    req.body() = std::move(body);
    req.prepare_payload();
    return req;
}

/// Runs the handler `start(ctx)` returns for `req` (from 127.0.0.1:40000) on a private
/// io_context, to its answer (which must not take the stream).
template <typename Start>
http_response answer_of(http_request req, Start start) {
    boost::asio::io_context io;
    std::optional<handler_result> out;
    std::exception_ptr failure;
    http_request_context ctx;
    ctx.req = std::move(req);
    ctx.peer = {boost::asio::ip::make_address("127.0.0.1"), 40000};
    boost::asio::co_spawn(io, start(std::move(ctx)),
                          [&](std::exception_ptr e, handler_result result) {
                              failure = e;
                              if (!e) {
                                  out.emplace(std::move(result));
                              }
                          });
    io.run();
    if (failure) {
        std::rethrow_exception(failure);
    }
    EXPECT_TRUE(out.has_value());
    EXPECT_TRUE(std::holds_alternative<http_response>(*out));
    return std::get<http_response>(std::move(*out));
}

/// Runs `req` through `r`, to the handler's answer.
inline http_response dispatch(const router& r, http_request req) {
    return answer_of(std::move(req),
                     [&](http_request_context ctx) { return r.dispatch(std::move(ctx)); });
}

/// The answer's body as JSON (a test failure when it is not).
inline json::document parse_json(const std::string& body) {
    json::document doc;
    EXPECT_FALSE(json::parse(body, doc).has_value()) << body;
    return doc;
}

}  // namespace sluice::gateway::testing
