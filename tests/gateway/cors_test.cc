// Browser origins (gateway/httpcore/cors.h): how origins are normalized, which Origin headers a
// front admits (its own, a listed one, none at all), one list for the origin check and CORS,
// and the HTTP front's rules: 403 for another origin, 415 for a state-changing /v1 request
// without a JSON body type.
#include <gtest/gtest.h>

#include <string>

#include "gateway/http/browser_rules.h"
#include "gateway/http/http_settings.h"
#include "gateway/core/config.h"

namespace sluice::gateway {
namespace {
namespace http = boost::beast::http;

http_request request(http::verb method, std::string host, std::string origin = "",
                     std::string content_type = "") {
    http_request req{method, "/", 11};
    if (!host.empty()) {
        req.set(http::field::host, host);
    }
    if (!origin.empty()) {
        req.set(http::field::origin, origin);
    }
    if (!content_type.empty()) {
        req.set(http::field::content_type, content_type);
    }
    return req;
}

http_request_context context(http_request req) {
    http_request_context ctx;
    ctx.req = std::move(req);
    ctx.path = "/";
    return ctx;
}

TEST(Origins, NormalizeLowersCaseAndDropsDefaultPorts) {
    EXPECT_EQ(normalize_origin("HTTPS://App.Example.com:443"), "https://app.example.com");
    EXPECT_EQ(normalize_origin("http://127.0.0.1:8082/"), "http://127.0.0.1:8082");
    EXPECT_EQ(normalize_origin("http://[::1]:80"), "http://[::1]");
    EXPECT_EQ(normalize_origin(" * "), "*");
    EXPECT_EQ(normalize_origin("null"), "null");
}

TEST(Origins, NormalizeRefusesWhatIsNotAnOrigin) {
    EXPECT_FALSE(normalize_origin("app.example.com"));
    EXPECT_FALSE(normalize_origin("https://app.example.com/path"));
    EXPECT_FALSE(normalize_origin("https://user@app.example.com"));
    EXPECT_FALSE(normalize_origin("https://app.example.com:99999"));
    EXPECT_FALSE(normalize_origin("https://"));
}

TEST(Origins, OriginOfUrlKeepsSchemeHostAndPort) {
    EXPECT_EQ(origin_of_url("https://lb.example.com/kafka"), "https://lb.example.com");
    EXPECT_EQ(origin_of_url("http://h:8082"), "http://h:8082");
    EXPECT_FALSE(origin_of_url(""));
}

TEST(Origins, RequestWithoutOriginIsAdmitted) {
    const cors_policy policy;
    EXPECT_TRUE(policy.admits(request(http::verb::post, "127.0.0.1:8082"), false));
}

TEST(Origins, OwnOriginIsAdmittedAndAnotherIsNot) {
    const cors_policy policy;
    EXPECT_TRUE(
        policy.admits(request(http::verb::get, "127.0.0.1:8082", "http://127.0.0.1:8082"), false));
    EXPECT_TRUE(policy.admits(request(http::verb::get, "Sluice.local", "http://sluice.local"),
                              false));
    EXPECT_FALSE(
        policy.admits(request(http::verb::get, "127.0.0.1:8082", "http://127.0.0.1:9000"), false));
    EXPECT_FALSE(policy.admits(request(http::verb::get, "127.0.0.1:8082", "http://evil.example"),
                               false));
    EXPECT_FALSE(policy.admits(request(http::verb::get, "127.0.0.1:8082", "null"), false));
    EXPECT_FALSE(policy.admits(request(http::verb::get, "", "http://127.0.0.1:8082"), false));
}

TEST(Origins, TlsListenerAdmitsOnlyItsHttpsOrigin) {
    const cors_policy policy;
    EXPECT_TRUE(policy.admits(request(http::verb::get, "h:8443", "https://h:8443"), true));
    EXPECT_FALSE(policy.admits(request(http::verb::get, "h:8443", "http://h:8443"), true));
}

TEST(Origins, ForwardedHostIsTheRequestsOwnBehindAProxy) {
    const cors_policy policy;
    auto req = request(http::verb::get, "10.0.0.5:8082", "https://sluice.example.com");
    req.set("X-Forwarded-Host", "sluice.example.com, proxy.internal");
    EXPECT_TRUE(policy.admits(req, false));
}

TEST(Origins, ListedAdvertisedAndSiblingOriginsAreAdmitted) {
    cors_policy policy;
    policy.allow_origins = {"https://app.example.com"};
    policy.own_origins = {"https://lb.example.com"};
    policy.sibling_ports = {8082};
    EXPECT_TRUE(policy.admits(request(http::verb::post, "x:9324", "https://app.example.com"),
                              false));
    EXPECT_TRUE(policy.admits(request(http::verb::post, "x:9324", "https://lb.example.com"),
                              false));
    EXPECT_TRUE(policy.admits(request(http::verb::post, "x:9324", "http://x:8082"), false));
    EXPECT_FALSE(policy.admits(request(http::verb::post, "x:9324", "http://y:8082"), false));
}

TEST(Origins, StarAdmitsEveryOriginAndAnswersStar) {
    cors_policy policy;
    policy.allow_origins = {"*"};
    EXPECT_TRUE(policy.admits(request(http::verb::post, "h", "http://evil.example"), false));
    EXPECT_EQ(policy.allow("http://evil.example"), "*");
}

TEST(Origins, AllowAnswersTheOriginAsSentOnlyWhenListed) {
    cors_policy policy;
    policy.allow_origins = {"https://app.example.com"};
    EXPECT_EQ(policy.allow("https://app.example.com"), "https://app.example.com");
    EXPECT_EQ(policy.allow("https://app.example.com:443"), "https://app.example.com:443");
    EXPECT_EQ(policy.allow("https://evil.example.com"), "");
    EXPECT_EQ(policy.allow(""), "");
}

TEST(Origins, SettingAndRestProxyNameMakeOneList) {
    config c;
    c.properties = {{"http.allowed.origins", "https://a.example.com, HTTPS://B.example.com/"},
                    {"access.control.allow.origin", "https://b.example.com,https://c.example.com"}};
    const auto s = read_http_settings(c);
    EXPECT_EQ(s.cors.allow_origins,
              (std::vector<std::string>{"https://a.example.com", "https://b.example.com",
                                        "https://c.example.com"}));
    EXPECT_TRUE(s.cors.enabled());
    EXPECT_NO_THROW(c.reject_unknown());
}

TEST(Origins, DefaultListIsEmptyAndAdvertisedUrlIsOwn) {
    config c;
    c.properties = {{"http.advertised.url", "https://lb.example.com/kafka/"}};
    const auto s = read_http_settings(c);
    EXPECT_TRUE(s.cors.allow_origins.empty());
    EXPECT_EQ(s.cors.own_origins, (std::vector<std::string>{"https://lb.example.com"}));
}

TEST(Origins, EntryThatIsNotAnOriginIsAConfigError) {
    config c;
    c.properties = {{"http.allowed.origins", "app.example.com"}};
    try {
        read_http_settings(c);
        FAIL() << "expected a config_error";
    } catch (const config_error& e) {
        EXPECT_NE(std::string(e.what()).find("http.allowed.origins: 'app.example.com'"),
                  std::string::npos)
            << e.what();
    }
}

TEST(BrowserRules, OtherOriginIsRefusedWith403InTheRoutesFormat) {
    const cors_policy policy;
    auto v1 = check_browser_rules(
        policy, context(request(http::verb::get, "h:1", "http://evil.example")), "/ws");
    ASSERT_TRUE(v1);
    EXPECT_EQ(v1->result_int(), 403u);
    EXPECT_NE(v1->body().find("\"error_code\":403"), std::string::npos);
    auto rest = check_browser_rules(
        policy,
        context(request(http::verb::post, "h:1", "http://evil.example", "application/json")),
        "/topics/{topic}");
    ASSERT_TRUE(rest);
    EXPECT_EQ(rest->result_int(), 403u);
    EXPECT_NE(rest->body().find("\"error_code\":40301"), std::string::npos);
}

TEST(BrowserRules, StateChangingV1RouteNeedsJson) {
    const cors_policy policy;
    const std::string route = "/v1/queues/{queue}/redrive";
    for (const char* type : {"text/plain", "application/x-www-form-urlencoded",
                             "multipart/form-data; boundary=x", ""}) {
        auto refusal = check_browser_rules(
            policy, context(request(http::verb::post, "h:1", "", type)), route);
        ASSERT_TRUE(refusal) << type;
        EXPECT_EQ(refusal->result_int(), 415u) << type;
        EXPECT_NE(refusal->body().find("Content-Type: application/json"), std::string::npos);
    }
    EXPECT_FALSE(check_browser_rules(
        policy, context(request(http::verb::post, "h:1", "", "application/json; charset=utf-8")),
        route));
    EXPECT_FALSE(check_browser_rules(
        policy, context(request(http::verb::post, "h:1", "http://h:1", "application/json")),
        route));
    // Reads and the REST Proxy's own media types are not this rule's.
    EXPECT_FALSE(check_browser_rules(policy, context(request(http::verb::get, "h:1")),
                                     "/v1/queues"));
    EXPECT_FALSE(check_browser_rules(
        policy, context(request(http::verb::post, "h:1", "", "text/plain")), "/topics/{topic}"));
}

TEST(BrowserRules, JsonMediaTypes) {
    EXPECT_TRUE(is_json_media_type("application/json"));
    EXPECT_TRUE(is_json_media_type("Application/JSON ; charset=utf-8"));
    EXPECT_TRUE(is_json_media_type("application/vnd.kafka.json.v2+json"));
    EXPECT_FALSE(is_json_media_type("text/json+plain"));
    EXPECT_FALSE(is_json_media_type("text/plain"));
    EXPECT_FALSE(is_json_media_type(""));
}

}  // namespace
}  // namespace sluice::gateway
