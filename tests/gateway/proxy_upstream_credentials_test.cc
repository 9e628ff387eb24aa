// What the Kafka proxy logs in upstream with: proxy.principal.map's file (entries, comments,
// passwords with blanks, every malformed line refused with its line number and never its
// password) and the upstream.* properties read for the proxy's own connections
// (security.protocol SSL / SASL_SSL accepted, librdkafka's ssl.* names honoured or refused).
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "gateway/proxy/principal_map.h"
#include "gateway/proxy/upstream_login.h"

namespace sluice::gateway::proxy {
namespace {

std::string map_error(const std::string& text) {
    try {
        principal_map::parse(text, "map.txt", false);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

TEST(ProxyPrincipalMap, EntriesAreFoundByPrincipal) {
    const auto m = principal_map::parse(
        "# proxy users\n"
        "\n"
        "User:alice -> SCRAM-SHA-512 app-alice  pass word with blanks  \r\n"
        "  User:bob->plain app-bob b0b\n",
        "map.txt", false);
    EXPECT_EQ(m.size(), 2u);
    const upstream_login* alice = m.find("User:alice");
    ASSERT_NE(alice, nullptr);
    EXPECT_EQ(alice->mechanism, "SCRAM-SHA-512");
    EXPECT_EQ(alice->username, "app-alice");
    EXPECT_EQ(alice->password, "pass word with blanks");
    const upstream_login* bob = m.find("User:bob");
    ASSERT_NE(bob, nullptr);
    EXPECT_EQ(bob->mechanism, "PLAIN");
    EXPECT_EQ(bob->password, "b0b");
    EXPECT_EQ(m.find("User:carol"), nullptr);
    EXPECT_EQ(m.find("alice"), nullptr);
}

TEST(ProxyPrincipalMap, UnmappedPrincipalsAreAdmittedUnlessDenied) {
    const std::string text = "User:alice -> PLAIN a p\n";
    EXPECT_TRUE(principal_map::parse(text, "m", false).admits("User:carol"));
    const auto denying = principal_map::parse(text, "m", true);
    EXPECT_FALSE(denying.admits("User:carol"));
    EXPECT_TRUE(denying.admits("User:alice"));
}

TEST(ProxyPrincipalMap, MalformedLinesAreNamedWithoutTheirPassword) {
    EXPECT_NE(map_error("\nUser:alice SCRAM-SHA-512 a Secret-1\n").find("map.txt line 2"),
              std::string::npos);
    EXPECT_NE(map_error("alice -> PLAIN a Secret-1").find("is not a principal"),
              std::string::npos);
    EXPECT_NE(map_error("User:alice -> GSSAPI a Secret-1").find("mechanism 'GSSAPI'"),
              std::string::npos);
    EXPECT_NE(map_error("User:alice -> PLAIN a").find("expected an upstream user name and a "
                                                      "password"),
              std::string::npos);
    const std::string twice = map_error("User:a -> PLAIN a Secret-1\nUser:a -> PLAIN b Secret-2");
    EXPECT_NE(twice.find("line 2: User:a is mapped twice"), std::string::npos) << twice;
    for (const auto& e : {map_error("User:alice SCRAM-SHA-512 a Secret-1"),
                          map_error("User:alice -> GSSAPI a Secret-1"), twice}) {
        EXPECT_EQ(e.find("Secret-"), std::string::npos) << e;
    }
}

TEST(ProxyPrincipalMap, UnreadableFileIsNamed) {
    try {
        principal_map::load("/nonexistent/map.txt", false);
        FAIL() << "no error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("proxy.principal.map /nonexistent/map.txt: cannot "
                                             "read"),
                  std::string::npos);
    }
}

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
