#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "gateway/httpcore/router.h"
#include "gateway/http/ui_assets.h"
#include "gateway/http/ui_routes.h"

namespace sluice::gateway {
namespace {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using http::verb;

// Sorted by path, as ui_assets() is.
constexpr ui_asset test_assets[] = {
    {"app.js", "let x = 1;\n", "\"aaaa\""},
    {"img/logo.svg", "<svg/>", "\"bbbb\""},
    {"index.html", "<!doctype html><p>hi", "\"cccc\""},
};

http_response answer(const router& r, http_request req) {
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
    EXPECT_TRUE(std::holds_alternative<http_response>(*out));
    return std::get<http_response>(std::move(*out));
}

http_response get(const router& r, std::string target, std::string if_none_match = "") {
    http_request req{verb::get, target, 11};
    if (!if_none_match.empty()) {
        req.set(http::field::if_none_match, if_none_match);
    }
    return answer(r, std::move(req));
}

/// A router with the UI routes over test_assets.
class UiRoutes : public ::testing::Test {
protected:
    UiRoutes() { add_ui_routes(r, test_assets); }
    router r;
};

TEST_F(UiRoutes, ServesAFileWithItsTypeEtagAndCaching) {
    auto res = get(r, "/ui/app.js");
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "let x = 1;\n");
    EXPECT_EQ(res[http::field::content_type], "text/javascript; charset=utf-8");
    EXPECT_EQ(res[http::field::etag], "\"aaaa\"");
    EXPECT_EQ(res[http::field::cache_control], "no-cache");
    EXPECT_EQ(res["X-Content-Type-Options"], "nosniff");
    EXPECT_EQ(res[http::field::content_length], "11");
}

TEST_F(UiRoutes, TrailingSlashServesTheIndex) {
    auto res = get(r, "/ui/");
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "<!doctype html><p>hi");
    EXPECT_EQ(res[http::field::content_type], "text/html; charset=utf-8");
}

TEST_F(UiRoutes, ServesFilesInSubfolders) {
    auto res = get(r, "/ui/img/logo.svg");
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res[http::field::content_type], "image/svg+xml");
    EXPECT_EQ(get(r, "/ui/img%2Flogo.svg").result_int(), 200);
}

TEST_F(UiRoutes, BareUiRedirectsToTheFolderKeepingTheQuery) {
    auto res = get(r, "/ui");
    EXPECT_EQ(res.result_int(), 308);
    EXPECT_EQ(res[http::field::location], "/ui/");
    EXPECT_EQ(get(r, "/ui?topic=t&group=g")[http::field::location], "/ui/?topic=t&group=g");
}

TEST_F(UiRoutes, UnknownFileIs404WithJsonBody) {
    for (const char* path : {"/ui/nope.js", "/ui/img/", "/ui/../app.js", "/ui/app.js/",
                             "/ui/APP.JS"}) {
        auto res = get(r, path);
        EXPECT_EQ(res.result_int(), 404) << path;
        EXPECT_EQ(res[http::field::content_type], "application/json") << path;
    }
    EXPECT_EQ(get(r, "/ui/nope.js").body(),
              "{\"error_code\":404,\"message\":\"no file /ui/nope.js\"}");
}

TEST_F(UiRoutes, MatchingIfNoneMatchIs304WithoutBody) {
    for (const char* inm : {"\"aaaa\"", "W/\"aaaa\"", "\"zzzz\", \"aaaa\"", "*"}) {
        auto res = get(r, "/ui/app.js", inm);
        EXPECT_EQ(res.result_int(), 304) << inm;
        EXPECT_EQ(res.body(), "") << inm;
        EXPECT_EQ(res[http::field::etag], "\"aaaa\"") << inm;
        EXPECT_EQ(res[http::field::cache_control], "no-cache") << inm;
        EXPECT_EQ(res.count(http::field::content_length), 0u) << inm;
    }
    EXPECT_EQ(get(r, "/ui/app.js", "\"bbbb\"").result_int(), 200);
}

TEST_F(UiRoutes, HeadAnswersTheHeadersOnly) {
    auto res = answer(r, http_request{verb::head, "/ui/app.js", 11});
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "");
    EXPECT_EQ(res[http::field::content_length], "11");
    EXPECT_EQ(res[http::field::etag], "\"aaaa\"");
}

TEST_F(UiRoutes, OtherMethodsAre405) {
    auto res = answer(r, http_request{verb::post, "/ui/app.js", 11});
    EXPECT_EQ(res.result_int(), 405);
    EXPECT_EQ(res[http::field::allow], "GET, HEAD");
}

TEST(UiContentType, ByExtension) {
    EXPECT_EQ(ui_content_type("index.html"), "text/html; charset=utf-8");
    EXPECT_EQ(ui_content_type("sluice.mjs"), "text/javascript; charset=utf-8");
    EXPECT_EQ(ui_content_type("style.css"), "text/css; charset=utf-8");
    EXPECT_EQ(ui_content_type("a/b.json"), "application/json");
    EXPECT_EQ(ui_content_type("favicon.ico"), "image/x-icon");
    EXPECT_EQ(ui_content_type("README"), "application/octet-stream");
    EXPECT_EQ(ui_content_type("dir.js/file"), "application/octet-stream");
    EXPECT_EQ(ui_content_type("x.exe"), "application/octet-stream");
}

TEST(EtagMatches, ListsWeakTagsAndStar) {
    EXPECT_TRUE(etag_matches("\"a1\"", "\"a1\""));
    EXPECT_TRUE(etag_matches(" W/\"a1\" ", "\"a1\""));
    EXPECT_TRUE(etag_matches("\"x\",\"a1\"", "\"a1\""));
    EXPECT_TRUE(etag_matches(" * ", "\"a1\""));
    EXPECT_FALSE(etag_matches("\"a12\"", "\"a1\""));
    EXPECT_FALSE(etag_matches("a1", "\"a1\""));
    EXPECT_FALSE(etag_matches(",", "\"a1\""));
}

TEST(UiAssets, EmbedsThePagesAndTheClientSortedWithDigestTags) {
    const auto assets = ui_assets();
    ASSERT_FALSE(assets.empty());
    EXPECT_TRUE(
        std::is_sorted(assets.begin(), assets.end(),
                       [](const ui_asset& a, const ui_asset& b) { return a.path < b.path; }));
    for (const char* name : {"index.html", "app.js", "sluice.js", "sluice.mjs", "style.css",
                             "events.html", "events.js"}) {
        auto it = std::find_if(assets.begin(), assets.end(),
                               [&](const ui_asset& a) { return a.path == name; });
        ASSERT_NE(it, assets.end()) << name;
        EXPECT_FALSE(it->body.empty()) << name;
        EXPECT_EQ(it->etag.size(), 18u) << name;  // '"' + 16 hex digits + '"'
        EXPECT_EQ(it->etag.front(), '"') << name;
        EXPECT_EQ(it->etag.back(), '"') << name;
    }
    // The default routes serve the embedded files.
    router r;
    add_ui_routes(r);
    auto res = get(r, "/ui/");
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_NE(res.body().find("sluice.js"), std::string::npos);
}

// --- the console at GET / -----------------------------------------------------------------

constexpr ui_asset console_assets[] = {
    {"console/index.html", "<!doctype html><title>console</title>", "\"dddd\""},
    {"index.html", "<!doctype html><p>hi", "\"cccc\""},
};

http_response get_accept(const router& r, std::string target, std::string accept) {
    http_request req{verb::get, target, 11};
    if (!accept.empty()) {
        req.set(http::field::accept, accept);
    }
    return answer(r, std::move(req));
}

boost::asio::awaitable<handler_result> rest_root(http_request_context) {
    co_return make_response({200, "application/vnd.kafka.v2+json", "{}"});
}

constexpr const char* browser_accept =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

TEST(ConsoleRoute, BrowsersGetTheConsoleOthersTheRestProxyRoot) {
    router r;
    r.add(verb::get, "/", rest_root);
    add_console_route(r, console_assets);
    auto res = get_accept(r, "/", browser_accept);
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "<!doctype html><title>console</title>");
    EXPECT_EQ(res[http::field::content_type], "text/html; charset=utf-8");
    EXPECT_EQ(res[http::field::vary], "Accept");
    for (const char* accept : {"", "*/*", "application/json", "application/vnd.kafka.v2+json",
                               "application/json, text/html;q=0.5", "text/html;q=0"}) {
        auto rest = get_accept(r, "/", accept);
        EXPECT_EQ(rest.result_int(), 200) << accept;
        EXPECT_EQ(rest.body(), "{}") << accept;
        EXPECT_EQ(rest[http::field::content_type], "application/vnd.kafka.v2+json") << accept;
    }
}

TEST(ConsoleRoute, WithoutARestRootOnlyBrowsersGetAnAnswer) {
    router r;
    add_console_route(r, console_assets);
    EXPECT_EQ(get_accept(r, "/", browser_accept).result_int(), 200);
    EXPECT_EQ(get_accept(r, "/", "*/*").result_int(), 404);
}

TEST(ConsoleRoute, AcceptPreference) {
    EXPECT_TRUE(accept_prefers_html("text/html"));
    EXPECT_TRUE(accept_prefers_html(browser_accept));
    EXPECT_TRUE(accept_prefers_html("application/json;q=0.5, TEXT/HTML"));
    EXPECT_TRUE(accept_prefers_html("application/xhtml+xml"));
    EXPECT_FALSE(accept_prefers_html(""));
    EXPECT_FALSE(accept_prefers_html("*/*"));
    EXPECT_FALSE(accept_prefers_html("text/*"));
    EXPECT_FALSE(accept_prefers_html("application/json, text/html;q=0.9"));
    EXPECT_FALSE(accept_prefers_html("text/html;q=0"));
    EXPECT_FALSE(accept_prefers_html("text/html;q=bad"));
}

TEST(RouterReplace, HandsBackThePreviousHandler) {
    router r;
    r.add(verb::get, "/", rest_root);
    auto replacement = [](http_request_context) -> boost::asio::awaitable<handler_result> {
        co_return make_response({200, "text/plain", "new"});
    };
    auto previous = r.replace(verb::get, "/", replacement);
    ASSERT_TRUE(previous.has_value());
    EXPECT_EQ(get(r, "/").body(), "new");
    // A pattern never registered is added.
    EXPECT_FALSE(r.replace(verb::get, "/x/{y}", rest_root).has_value());
    EXPECT_EQ(get(r, "/x/1").body(), "{}");
}

}  // namespace
}  // namespace sluice::gateway
