#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "gateway/httpcore/router.h"

namespace sluice::gateway {
namespace {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using http::verb;

/// Answers "<tag> name=value ..." with the route's captures.
asio::awaitable<handler_result> echo(std::string tag, http_request_context ctx) {
    std::string body = tag;
    for (const auto& [k, v] : ctx.params.items()) {
        body += " " + k + "=" + v;
    }
    co_return make_response({200, "text/plain", body});
}

route_handler tagged(std::string tag) {
    return [tag](http_request_context ctx) { return echo(tag, std::move(ctx)); };
}

/// Answers the query parameters as "name=value;..." in order.
asio::awaitable<handler_result> echo_query(http_request_context ctx) {
    std::string body;
    for (const auto& [k, v] : ctx.query.items()) {
        body += k + "=" + v + ";";
    }
    co_return make_response({200, "text/plain", body});
}

asio::awaitable<handler_result> take_stream(http_request_context) { co_return stream_taken{}; }

asio::awaitable<handler_result> throw_bug(http_request_context) {
    throw std::logic_error("handler bug");
    co_return stream_taken{};
}

http_request route_request(verb method, std::string target, unsigned version = 11) {
    return http_request{method, target, version};
}

/// Dispatches `req` through `r` on a private io_context, without sockets.
handler_result dispatch(const router& r, http_request req) {
    asio::io_context io;
    std::optional<handler_result> out;
    std::exception_ptr failure;
    http_request_context ctx;
    ctx.req = std::move(req);
    asio::co_spawn(io, r.dispatch(std::move(ctx)),
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
    return std::move(*out);
}

http_response answer(const router& r, verb method, std::string target) {
    auto result = dispatch(r, route_request(method, std::move(target)));
    EXPECT_TRUE(std::holds_alternative<http_response>(result));
    return std::get<http_response>(std::move(result));
}

TEST(Router, MatchesLiteralPath) {
    router r;
    r.add(verb::get, "/healthz", tagged("health"));
    auto res = answer(r, verb::get, "/healthz");
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "health");
    EXPECT_EQ(res[http::field::content_length], "6");
}

TEST(Router, CapturesNamedSegments) {
    router r;
    r.add(verb::get, "/topics/{topic}/partitions/{partition}", tagged("p"));
    auto m = r.find(verb::get, "/topics/orders/partitions/3");
    ASSERT_EQ(m.result, router::match::outcome::found);
    EXPECT_EQ(m.pattern, "/topics/{topic}/partitions/{partition}");
    EXPECT_EQ(m.params.get("topic"), "orders");
    EXPECT_EQ(m.params.get("partition"), "3");
    EXPECT_FALSE(m.params.has("group"));
}

TEST(Router, PercentDecodesCaptures) {
    router r;
    r.add(verb::get, "/topics/{topic}", tagged("t"));
    auto m = r.find(verb::get, "/topics/a%2Fb%20c+d");
    ASSERT_EQ(m.result, router::match::outcome::found);
    // '%2F' stays inside the segment; '+' is a plus in a path.
    EXPECT_EQ(m.params.get("topic"), "a/b c+d");
}

TEST(Router, MalformedEscapeInThePathIs400) {
    router r;
    r.add(verb::get, "/topics/{topic}", tagged("t"));
    for (const char* bad : {"/topics/%zz", "/topics/abc%4", "/topics/%"}) {
        auto res = answer(r, verb::get, bad);
        EXPECT_EQ(res.result_int(), 400) << bad;
        EXPECT_EQ(res.body(),
                  "{\"error_code\":400,\"message\":\"malformed percent-encoding in the path\"}");
    }
}

TEST(Router, LiteralSegmentBeatsCapture) {
    router r;
    r.add(verb::get, "/topics/{topic}", tagged("capture"));
    r.add(verb::get, "/topics/_all", tagged("literal"));
    EXPECT_EQ(answer(r, verb::get, "/topics/_all").body(), "literal");
    EXPECT_EQ(answer(r, verb::get, "/topics/other").body(), "capture topic=other");
}

TEST(Router, BacktracksFromLiteralToCapture) {
    router r;
    r.add(verb::get, "/a/b/c", tagged("literal"));
    r.add(verb::get, "/a/{x}/d", tagged("capture"));
    EXPECT_EQ(answer(r, verb::get, "/a/b/c").body(), "literal");
    EXPECT_EQ(answer(r, verb::get, "/a/b/d").body(), "capture x=b");
}

TEST(Router, CaptureBeatsRest) {
    router r;
    r.add(verb::get, "/files/{path...}", tagged("rest"));
    r.add(verb::get, "/files/{name}", tagged("one"));
    EXPECT_EQ(answer(r, verb::get, "/files/x").body(), "one name=x");
    EXPECT_EQ(answer(r, verb::get, "/files/x/y").body(), "rest path=x/y");
}

TEST(Router, RestKeepsTheRemainderRaw) {
    router r;
    r.add(verb::get, "/files/{path...}", tagged("rest"));
    EXPECT_EQ(answer(r, verb::get, "/files/a/b%2Fc/%zz").body(), "rest path=a/b%2Fc/%zz");
    EXPECT_EQ(answer(r, verb::get, "/files/").body(), "rest path=");
    EXPECT_EQ(answer(r, verb::get, "/files").result_int(), 404);
}

TEST(Router, EmptySegmentDoesNotMatchACapture) {
    router r;
    r.add(verb::get, "/topics/{topic}", tagged("t"));
    EXPECT_EQ(r.find(verb::get, "/topics/").result, router::match::outcome::not_found);
    EXPECT_EQ(r.find(verb::get, "/topics//x").result, router::match::outcome::not_found);
}

TEST(Router, UnknownPathIs404WithJsonBody) {
    router r;
    r.add(verb::get, "/healthz", tagged("h"));
    auto res = answer(r, verb::get, "/nope?x=1");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_EQ(res[http::field::content_type], "application/json");
    EXPECT_EQ(res.body(), "{\"error_code\":404,\"message\":\"no route for GET /nope\"}");
    EXPECT_EQ(answer(r, verb::get, "/healthz/").result_int(), 404);
    EXPECT_EQ(r.find(verb::get, "http://host/healthz").result,
              router::match::outcome::not_found);
}

TEST(Router, OtherMethodIs405WithAllowHeader) {
    router r;
    r.add(verb::get, "/topics", tagged("list"));
    r.add(verb::post, "/topics", tagged("create"));
    auto res = answer(r, verb::delete_, "/topics");
    EXPECT_EQ(res.result_int(), 405);
    EXPECT_EQ(res[http::field::allow], "GET, HEAD, POST");
    EXPECT_EQ(res.body(), "{\"error_code\":405,\"message\":\"use GET or POST\"}");
}

TEST(Router, GetOnlyRouteSays405UseGet) {
    router r;
    r.add(verb::get, "/healthz", tagged("h"));
    auto res = answer(r, verb::post, "/healthz");
    EXPECT_EQ(res.result_int(), 405);
    EXPECT_EQ(res[http::field::allow], "GET, HEAD");
    EXPECT_EQ(res.body(), "{\"error_code\":405,\"message\":\"use GET\"}");
}

TEST(Router, MethodIsMatchedAcrossPatterns) {
    router r;
    r.add(verb::get, "/topics/_all", tagged("all"));
    r.add(verb::post, "/topics/{topic}", tagged("produce"));
    // The literal route has no POST; the capture route has.
    EXPECT_EQ(answer(r, verb::post, "/topics/_all").body(), "produce topic=_all");
    auto res = answer(r, verb::put, "/topics/_all");
    EXPECT_EQ(res.result_int(), 405);
    EXPECT_EQ(res[http::field::allow], "GET, HEAD, POST");
}

TEST(Router, HeadRunsTheGetHandlerWithoutBody) {
    router r;
    r.add(verb::get, "/healthz", tagged("healthy"));
    auto res = answer(r, verb::head, "/healthz");
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "");
    EXPECT_EQ(res[http::field::content_length], "7");
}

asio::awaitable<handler_result> answer_status(unsigned status, http_request_context) {
    co_return make_response({status, "text/plain", ""});
}

TEST(Router, NoContentAnswersCarryNoContentLength) {
    router r;
    for (unsigned status : {204u, 304u}) {
        r.add(verb::get, "/s" + std::to_string(status), [status](http_request_context ctx) {
            return answer_status(status, std::move(ctx));
        });
    }
    for (const char* target : {"/s204", "/s304"}) {
        auto res = answer(r, verb::get, target);
        EXPECT_EQ(res.count(http::field::content_length), 0u) << target;
        EXPECT_EQ(res.count(http::field::transfer_encoding), 0u) << target;
        EXPECT_EQ(res.body(), "") << target;
    }
}

TEST(Router, ExplicitHeadRouteWins) {
    router r;
    r.add(verb::get, "/x", tagged("get"));
    r.add(verb::head, "/x", tagged("head-route"));
    auto res = answer(r, verb::head, "/x");
    EXPECT_EQ(res[http::field::content_length], "10");
}

TEST(Router, ParsesQueryParameters) {
    router r;
    r.add(verb::get, "/q", echo_query);
    EXPECT_EQ(answer(r, verb::get, "/q?a=1&b=x+y&&b=%41&flag&e=").body(),
              "a=1;b=x y;b=A;flag=;e=;");
}

TEST(Router, MalformedQueryIs400) {
    router r;
    r.add(verb::get, "/q", echo_query);
    auto res = answer(r, verb::get, "/q?a=%g1");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_EQ(answer(r, verb::get, "/nope?a=%g1").result_int(), 404);
}

TEST(Router, ResponseCarriesTheRequestVersion) {
    router r;
    r.add(verb::get, "/x", tagged("x"));
    auto result = dispatch(r, route_request(verb::get, "/x", 10));
    EXPECT_EQ(std::get<http_response>(result).version(), 10u);
}

TEST(Router, StreamTakenPassesThrough) {
    router r;
    r.add(verb::get, "/ws", take_stream);
    EXPECT_TRUE(std::holds_alternative<stream_taken>(dispatch(r, route_request(verb::get, "/ws"))));
}

TEST(Router, HandlerExceptionPropagates) {
    router r;
    r.add(verb::get, "/bug", throw_bug);
    EXPECT_THROW(dispatch(r, route_request(verb::get, "/bug")), std::logic_error);
}

TEST(Router, RejectsMalformedAndDuplicatePatterns) {
    router r;
    r.add(verb::get, "/topics/{topic}", tagged("t"));
    EXPECT_THROW(r.add(verb::get, "/topics/{name}", tagged("again")), std::invalid_argument);
    EXPECT_NO_THROW(r.add(verb::post, "/topics/{name}", tagged("post")));
    EXPECT_THROW(r.add(verb::get, "topics", tagged("x")), std::invalid_argument);
    EXPECT_THROW(r.add(verb::get, "/a/{rest...}/b", tagged("x")), std::invalid_argument);
    EXPECT_THROW(r.add(verb::get, "/a/{}", tagged("x")), std::invalid_argument);
    EXPECT_THROW(r.add(verb::get, "/a/{x}/{x}", tagged("x")), std::invalid_argument);
    EXPECT_THROW(r.add(verb::get, "/a/b%20c", tagged("x")), std::invalid_argument);
    EXPECT_THROW(r.add(verb::get, "/a/x{y}", tagged("x")), std::invalid_argument);
}

TEST(PercentDecode, DecodesEscapesAndOptionallyPlus) {
    EXPECT_EQ(percent_decode("a%20b%2f%2F"), "a b//");
    EXPECT_EQ(percent_decode("a+b"), "a+b");
    EXPECT_EQ(percent_decode("a+b", true), "a b");
    EXPECT_EQ(percent_decode("%00"), std::string(1, '\0'));
    EXPECT_FALSE(percent_decode("%"));
    EXPECT_FALSE(percent_decode("%4"));
    EXPECT_FALSE(percent_decode("%4g"));
}

TEST(FinishSignal, CallbackRunsOnRequestOrAtOnceWhenAlreadyRequested) {
    finish_signal s;
    int calls = 0;
    s.on_request([&] { ++calls; });
    s.request();
    s.request();
    EXPECT_EQ(calls, 1);
    s.on_request([&] { ++calls; });
    EXPECT_EQ(calls, 2);
    EXPECT_TRUE(s.requested());
}

/// A guard that refuses every request without "?key=ok" and names the caller otherwise.
asio::awaitable<std::optional<http_response>> key_guard(http_request_context* ctx,
                                                        std::string pattern) {
    if (ctx->query.get("key") != std::optional<std::string_view>("ok")) {
        co_return error_response(401, "no key for " + pattern);
    }
    ctx->principal = "User:keyholder";
    co_return std::nullopt;
}

asio::awaitable<handler_result> echo_principal(http_request_context ctx) {
    co_return make_response({200, "text/plain", ctx.principal});
}

TEST(Router, GuardRunsBeforeEveryMatchedHandler) {
    router r;
    r.add(verb::get, "/topics/{topic}", echo_principal);
    r.set_guard(key_guard);
    auto refused = answer(r, verb::get, "/topics/a");
    EXPECT_EQ(refused.result_int(), 401);
    EXPECT_NE(refused.body().find("no key for /topics/{topic}"), std::string::npos);
    auto passed = answer(r, verb::get, "/topics/a?key=ok");
    EXPECT_EQ(passed.result_int(), 200);
    EXPECT_EQ(passed.body(), "User:keyholder");
    EXPECT_EQ(answer(r, verb::get, "/nowhere").result_int(), 404);
}

TEST(Router, PrincipalIsAnonymousWithoutAGuard) {
    router r;
    r.add(verb::get, "/who", echo_principal);
    EXPECT_EQ(answer(r, verb::get, "/who").body(), "User:ANONYMOUS");
}

}  // namespace
}  // namespace sluice::gateway
