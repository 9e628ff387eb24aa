// KIP-368 on the Kafka proxy's upstream connections (gateway/proxy): when a re-authentication
// is due (reauth_delay: Kafka's Java client's 85-95 % of the session, bounded by the request
// timeout) and the SASL exchange it runs between forwarded requests (upstream_sasl_exchange:
// SaslHandshake v1 and SaslAuthenticate v1 as frames and responses, correlation ids of its
// own, the session's lifetime taken from the last answer, the token file read again at each
// exchange, a refusal named without the secret).
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gateway/proxy/upstream_login.h"
#include "protocol/kafka/header.h"
#include "protocol/kafka/messages/sasl_authenticate.h"
#include "protocol/kafka/messages/sasl_handshake.h"

namespace sluice::gateway::proxy {
namespace {
namespace kafka = protocol::kafka;
using std::chrono::milliseconds;

TEST(ProxyReauthDelay, FallsBetween85And95PercentOfTheSession) {
    const milliseconds timeout{30000};
    EXPECT_EQ(reauth_delay(3'600'000, timeout, 0.0), milliseconds(3'060'000));
    EXPECT_EQ(reauth_delay(3'600'000, timeout, 1.0), milliseconds(3'420'000));
    const auto mid = reauth_delay(3'600'000, timeout, 0.5);
    EXPECT_GT(mid, milliseconds(3'060'000));
    EXPECT_LT(mid, milliseconds(3'420'000));
    // Out-of-range jitter is clamped, never past the window.
    EXPECT_EQ(reauth_delay(3'600'000, timeout, 7.0), milliseconds(3'420'000));
    EXPECT_EQ(reauth_delay(3'600'000, timeout, -1.0), milliseconds(3'060'000));
}

TEST(ProxyReauthDelay, EndsARequestTimeoutBeforeTheSessionButNotBeforeHalfOfIt) {
    // 100 s session, 30 s request timeout: at 70 s at the latest, not 85-95 s.
    EXPECT_EQ(reauth_delay(100'000, milliseconds(30000), 0.0), milliseconds(70'000));
    EXPECT_EQ(reauth_delay(100'000, milliseconds(30000), 1.0), milliseconds(70'000));
    // A session shorter than twice the timeout: never before half of it.
    EXPECT_EQ(reauth_delay(40'000, milliseconds(30000), 1.0), milliseconds(20'000));
    // A session shorter than the timeout (a test's few seconds): at half of it.
    EXPECT_EQ(reauth_delay(4'000, milliseconds(30000), 0.0), milliseconds(2'000));
    EXPECT_EQ(reauth_delay(4'000, milliseconds(30000), 1.0), milliseconds(2'000));
    // A short timeout leaves the window alone.
    EXPECT_EQ(reauth_delay(4'000, milliseconds(100), 0.0), milliseconds(3'400));
    EXPECT_EQ(reauth_delay(4'000, milliseconds(500), 1.0), milliseconds(3'500));
}

TEST(ProxyReauthDelay, ATinySessionStillWaitsAMillisecond) {
    EXPECT_EQ(reauth_delay(1, milliseconds(30000), 0.0), milliseconds(1));
    EXPECT_EQ(reauth_delay(0, milliseconds(30000), 0.0), milliseconds(1));
}

/// A request frame the exchange sent: its header and body.
struct sent_request {
    kafka::request_header header;
    protocol::byte_buffer body;
};

sent_request decode_sent(const protocol::writer& w) {
    const protocol::byte_buffer frame = w.flatten();
    EXPECT_GE(frame.size(), 4u);
    EXPECT_EQ(static_cast<std::size_t>(protocol::load_i32(frame.data())), frame.size() - 4);
    protocol::reader r(frame.view().subspan(4));
    auto header = kafka::decode_request_header(r);
    EXPECT_TRUE(header.has_value());
    sent_request out;
    out.header = *header;
    out.body.append(r.rest());
    return out;
}

template <typename Response>
protocol::byte_buffer answer(std::int32_t correlation_id, const Response& resp) {
    protocol::writer w;
    w.i32(correlation_id);
    resp.encode(w, 1);
    return w.flatten();
}

protocol::byte_buffer handshake_ok(std::int32_t correlation_id) {
    kafka::sasl_handshake_response resp;
    resp.error_code = kafka::error_code::none;
    resp.mechanisms = {"PLAIN", "OAUTHBEARER"};
    return answer(correlation_id, resp);
}

protocol::byte_buffer authenticate_answer(std::int32_t correlation_id, kafka::error_code code,
                                          std::int64_t lifetime_ms) {
    kafka::sasl_authenticate_response resp;
    resp.error_code = code;
    resp.error_message = code == kafka::error_code::none
                             ? std::nullopt
                             : std::optional<std::string>("Authentication failed");
    resp.session_lifetime_ms = lifetime_ms;
    return answer(correlation_id, resp);
}

/// The SaslAuthenticate request's auth_bytes as text.
std::string auth_bytes_of(const sent_request& req) {
    EXPECT_EQ(req.header.api_key, static_cast<std::int16_t>(kafka::api_key::sasl_authenticate));
    EXPECT_EQ(req.header.api_version, 1);
    protocol::reader r(req.body.view());
    kafka::sasl_authenticate_request a;
    a.decode(r, 1);
    EXPECT_TRUE(r.ok());
    return {reinterpret_cast<const char*>(a.auth_bytes.data()), a.auth_bytes.size()};
}

/// Runs one exchange against answers made here; the auth_bytes sent, and the lifetime.
struct exchange_outcome {
    upstream_sasl_exchange::state what = upstream_sasl_exchange::state::failed;
    std::string token;
    std::int64_t lifetime_ms = 0;
    std::string why;
};

exchange_outcome run_exchange(const upstream_login& login, std::int32_t first_id,
                              kafka::error_code verdict, std::int64_t lifetime_ms) {
    upstream_sasl_exchange x(login, first_id);
    auto step = x.start();
    exchange_outcome out;
    if (step.what != upstream_sasl_exchange::state::sending) {
        out.what = step.what;
        out.why = x.why();
        return out;
    }
    const auto hs = decode_sent(step.request);
    EXPECT_EQ(hs.header.api_key, static_cast<std::int16_t>(kafka::api_key::sasl_handshake));
    EXPECT_EQ(hs.header.api_version, 1);
    EXPECT_EQ(hs.header.correlation_id, first_id);
    EXPECT_EQ(x.correlation_id(), first_id);
    protocol::reader r(hs.body.view());
    kafka::sasl_handshake_request h;
    h.decode(r, 1);
    EXPECT_EQ(h.mechanism, login.mechanism);
    step = x.on_response(handshake_ok(first_id).view());
    EXPECT_EQ(step.what, upstream_sasl_exchange::state::sending);
    const auto auth = decode_sent(step.request);
    EXPECT_EQ(auth.header.correlation_id, first_id + 1);
    out.token = auth_bytes_of(auth);
    step = x.on_response(authenticate_answer(first_id + 1, verdict, lifetime_ms).view());
    out.what = step.what;
    out.lifetime_ms = x.session_lifetime_ms();
    out.why = x.why();
    return out;
}

TEST(ProxyUpstreamSaslExchange, PlainLoginTakesTheSessionLifetime) {
    upstream_login login;
    login.mechanism = "PLAIN";
    login.username = "gateway";
    login.password = "gw-Secret-1";
    const auto out = run_exchange(login, -1000000, kafka::error_code::none, 5000);
    EXPECT_EQ(out.what, upstream_sasl_exchange::state::done);
    EXPECT_EQ(out.token, std::string("\0gateway\0gw-Secret-1", 20));
    EXPECT_EQ(out.lifetime_ms, 5000);
}

TEST(ProxyUpstreamSaslExchange, NoLifetimeMeansNoReauthentication) {
    upstream_login login;
    login.mechanism = "PLAIN";
    login.username = "gateway";
    login.password = "pw";
    EXPECT_EQ(run_exchange(login, 1, kafka::error_code::none, 0).lifetime_ms, 0);
    // A negative lifetime from a broken upstream is no lifetime.
    EXPECT_EQ(run_exchange(login, 1, kafka::error_code::none, -5).lifetime_ms, 0);
}

TEST(ProxyUpstreamSaslExchange, ARefusalNamesTheUserNotThePassword) {
    upstream_login login;
    login.mechanism = "PLAIN";
    login.username = "gateway";
    login.password = "gw-Secret-1";
    const auto out =
        run_exchange(login, 1, kafka::error_code::sasl_authentication_failed, 5000);
    EXPECT_EQ(out.what, upstream_sasl_exchange::state::failed);
    EXPECT_NE(out.why.find("user gateway"), std::string::npos) << out.why;
    EXPECT_NE(out.why.find("SASL_AUTHENTICATION_FAILED"), std::string::npos) << out.why;
    EXPECT_EQ(out.why.find("gw-Secret-1"), std::string::npos) << out.why;
}

TEST(ProxyUpstreamSaslExchange, AnAnswerToAnotherRequestIsMalformed) {
    upstream_login login;
    login.mechanism = "PLAIN";
    login.username = "gateway";
    login.password = "pw";
    upstream_sasl_exchange x(login, -1000000);
    ASSERT_EQ(x.start().what, upstream_sasl_exchange::state::sending);
    // A client's correlation id where the proxy's own was due.
    EXPECT_EQ(x.on_response(handshake_ok(7).view()).what, upstream_sasl_exchange::state::failed);
    EXPECT_NE(x.why().find("malformed"), std::string::npos) << x.why();
    // Truncated: fails, never reads past the bytes.
    upstream_sasl_exchange y(login, 1);
    ASSERT_EQ(y.start().what, upstream_sasl_exchange::state::sending);
    const auto full = handshake_ok(1);
    EXPECT_EQ(y.on_response(full.view().first(5)).what, upstream_sasl_exchange::state::failed);
}

TEST(ProxyUpstreamSaslExchange, EachExchangeReadsTheTokenFileAgain) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("sluice-reauth-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto file = (dir / "token.jwt").string();
    {
        std::ofstream(file) << "first.token.value\n";
    }
    upstream_login login;
    login.mechanism = "OAUTHBEARER";
    login.token_file = file;
    const auto first = run_exchange(login, 1, kafka::error_code::none, 4000);
    EXPECT_EQ(first.what, upstream_sasl_exchange::state::done);
    EXPECT_NE(first.token.find("auth=Bearer first.token.value"), std::string::npos);
    // Renewed by whoever renews it: the next exchange (a re-authentication) sends the new one.
    {
        std::ofstream(file) << "  second.token.value  \n";
    }
    const auto second = run_exchange(login, -1000000, kafka::error_code::none, 4000);
    EXPECT_EQ(second.what, upstream_sasl_exchange::state::done);
    EXPECT_NE(second.token.find("auth=Bearer second.token.value"), std::string::npos);
    EXPECT_EQ(second.token.find("first"), std::string::npos);
    // Gone: the exchange fails before sending anything, naming the file.
    std::filesystem::remove_all(dir);
    upstream_sasl_exchange gone(login, 1);
    EXPECT_EQ(gone.start().what, upstream_sasl_exchange::state::failed);
    EXPECT_NE(gone.why().find(file), std::string::npos) << gone.why();
}

}  // namespace
}  // namespace sluice::gateway::proxy
