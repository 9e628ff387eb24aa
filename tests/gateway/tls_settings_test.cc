// The TLS settings of a listener: Kafka's listener.name.<name>. prefix wins over the plain key,
// every TLS key is known to reject_unknown, and a listener without certificate or key is one
// clear error.
#include <gtest/gtest.h>

#include <string>

#include "gateway/core/config.h"
#include "gateway/core/tls_settings.h"

namespace sluice::gateway {
namespace {

TEST(TlsSettings, ListenerPrefixWinsOverThePlainKey) {
    config c;
    c.properties = {{"ssl.certificate.location", "/plain.pem"},
                    {"ssl.key.location", "/plain.key"},
                    {"listener.name.sasl_ssl.ssl.key.location", "/sasl.key"},
                    {"listener.name.ssl.ssl.client.auth", "required"}};
    const auto sasl = read_tls_settings(c, "sasl_ssl");
    EXPECT_EQ(sasl.certificate, "/plain.pem");
    EXPECT_EQ(sasl.key, "/sasl.key");
    EXPECT_EQ(sasl.client, auth::client_auth::none);
    const auto ssl = read_tls_settings(c, "ssl");
    EXPECT_EQ(ssl.key, "/plain.key");
    EXPECT_EQ(ssl.client, auth::client_auth::required);
    EXPECT_EQ(ssl.principal_rules, "DEFAULT");
}

TEST(TlsSettings, EveryTlsKeyIsKnown) {
    config c;
    c.properties = {{"listener.name.https.ssl.ca.location", "/ca.pem"},
                    {"ssl.principal.mapping.rules", "DEFAULT"}};
    read_tls_settings(c, "ssl");
    EXPECT_NO_THROW(c.reject_unknown());
}

TEST(TlsSettings, BadClientAuthIsAConfigError) {
    config c;
    c.properties = {{"ssl.client.auth", "always"}};
    EXPECT_THROW(read_tls_settings(c, "ssl"), config_error);
}

TEST(TlsSettings, ListenerWithoutCertificateIsOneClearError) {
    config c;
    c.properties = {{"ssl.key.location", "/k.pem"}};
    try {
        open_tls_listener_context(c, "ssl", "Kafka listener SSL://127.0.0.1:9093");
        FAIL();
    } catch (const config_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("Kafka listener SSL://127.0.0.1:9093"), std::string::npos);
        EXPECT_NE(what.find("ssl.certificate.location"), std::string::npos);
        EXPECT_EQ(what.find('\n'), std::string::npos);
    }
}

TEST(TlsSettings, ListenerNamesAreTheLowerCaseProtocols) {
    EXPECT_EQ(tls_listener_name(security_protocol::ssl), "ssl");
    EXPECT_EQ(tls_listener_name(security_protocol::sasl_ssl), "sasl_ssl");
}

}  // namespace
}  // namespace sluice::gateway
