// What the Kafka proxy logs in upstream with: the upstream.* properties read for the proxy's
// own connections (security.protocol SSL / SASL_SSL accepted, librdkafka's ssl.* names
// honoured or refused).
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "gateway/proxy/upstream_login.h"

namespace sluice::gateway::proxy {
namespace {

std::string tls_error_of(const std::map<std::string, std::string>& p) {
    try {
        read_upstream_tls(p);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

TEST(ProxyUpstreamTls, PlaintextProtocolsHaveNoContext) {
    EXPECT_EQ(read_upstream_tls({}), nullptr);
    EXPECT_EQ(read_upstream_tls({{"security.protocol", "SASL_PLAINTEXT"}}), nullptr);
}

TEST(ProxyUpstreamTls, SslAndSaslSslBuildAContext) {
    const auto ssl = read_upstream_tls({{"security.protocol", "ssl"}});
    ASSERT_NE(ssl, nullptr);
    EXPECT_TRUE(ssl->verify_host);  // librdkafka's default: https
    const auto none = read_upstream_tls({{"security.protocol", "SASL_SSL"},
                                         {"ssl.endpoint.identification.algorithm", "none"}});
    ASSERT_NE(none, nullptr);
    EXPECT_FALSE(none->verify_host);
    const auto login = read_upstream_login({{"security.protocol", "SASL_SSL"},
                                            {"sasl.mechanism", "SCRAM-SHA-256"},
                                            {"sasl.username", "gw"},
                                            {"sasl.password", "pw"}});
    EXPECT_TRUE(login.enabled());
    EXPECT_FALSE(read_upstream_login({{"security.protocol", "SSL"}}).enabled());
}

TEST(ProxyUpstreamTls, PropertiesTheProxyCannotHonourStopTheStart) {
    EXPECT_NE(tls_error_of({{"security.protocol", "SSL"},
                            {"ssl.keystore.location", "/k.p12"}})
                  .find("upstream.ssl.keystore.location: not honoured"),
              std::string::npos);
    EXPECT_NE(tls_error_of({{"security.protocol", "SSL"},
                            {"ssl.endpoint.identification.algorithm", "dns"}})
                  .find("expected https or none"),
              std::string::npos);
    EXPECT_NE(tls_error_of({{"security.protocol", "SSL"}, {"ssl.ca.location", "/nope.pem"}})
                  .find("upstream.ssl.ca.location /nope.pem: cannot read"),
              std::string::npos);
    // Not TLS: ssl.* is librdkafka's business only.
    EXPECT_EQ(tls_error_of({{"ssl.keystore.location", "/k.p12"}}), "");
}

}  // namespace
}  // namespace sluice::gateway::proxy
