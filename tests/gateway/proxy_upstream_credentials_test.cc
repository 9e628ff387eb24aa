// What the Kafka proxy logs in upstream with: proxy.principal.map's file (entries, comments,
// passwords with blanks, every malformed line refused with its line number and never its
// password; CERTIFICATE entries built into client contexts of their own, SASL and certificate
// entries each refused on an upstream that cannot use them; OAUTHBEARER entries' token files
// read with the map and again at each login, never echoed) and the upstream.* properties read
// for the proxy's own connections
// (security.protocol SSL / SASL_SSL accepted, librdkafka's ssl.* names honoured or refused).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include "gateway/proxy/principal_map.h"
#include "gateway/proxy/upstream_login.h"

namespace sluice::gateway::proxy {
namespace {

const principal_map_upstream sasl_upstream{.sasl = true, .tls = std::nullopt};

std::string map_error(const std::string& text,
                      const principal_map_upstream& upstream = sasl_upstream) {
    try {
        principal_map::parse(text, "map.txt", false, upstream);
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
        "map.txt", false, sasl_upstream);
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
    EXPECT_TRUE(principal_map::parse(text, "m", false, sasl_upstream).admits("User:carol"));
    const auto denying = principal_map::parse(text, "m", true, sasl_upstream);
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
        principal_map::load("/nonexistent/map.txt", false, sasl_upstream);
        FAIL() << "no error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("proxy.principal.map /nonexistent/map.txt: cannot "
                                             "read"),
                  std::string::npos);
    }
}

namespace fs = std::filesystem;

/// The error parsing `text` as a map file in `dir` gives, or "" when it parses.
std::string map_parse_error(const std::string& text, const principal_map_upstream& u,
                            const fs::path& dir) {
    try {
        principal_map::parse(text, "map.txt", false, u, dir.string());
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

/// A client certificate and its key (plain and under a password) made with the openssl command
/// line in a folder of their own.
class ProxyPrincipalMapCertificates : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = fs::temp_directory_path() /
               ("sluice-proxy-map-test-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        const std::string d = dir_.string();
        for (const std::string& command :
             {"openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=app-alice -keyout " +
                  d + "/alice.key -out " + d + "/alice.pem",
              "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other -keyout " + d +
                  "/other.key -out " + d + "/other.pem",
              "openssl pkey -in " + d + "/alice.key -aes256 -passout pass:Key-Secret-3 -out " +
                  d + "/alice-enc.key"}) {
            ASSERT_EQ(std::system((command + " >/dev/null 2>&1").c_str()), 0) << command;
        }
    }
    static void TearDownTestSuite() { fs::remove_all(dir_); }

    static principal_map_upstream ssl_upstream() {
        principal_map_upstream u;
        u.tls = auth::tls_client_settings{};
        u.tls->ca = (dir_ / "alice.pem").string();  // any readable CA file will do here
        return u;
    }
    static std::string error_of(const std::string& text, const principal_map_upstream& u) {
        return map_parse_error(text, u, dir_);
    }

    static inline fs::path dir_;
};

TEST_F(ProxyPrincipalMapCertificates, EntriesGetAContextOfTheirOwnAndNoSaslLogin) {
    const auto m = principal_map::parse(
        "User:alice -> CERTIFICATE alice.pem " + (dir_ / "alice-enc.key").string() +
            "  Key-Secret-3 \n"
            "User:CN=Billing Service,O=example -> certificate alice.pem alice.key\n",
        "map.txt", false, ssl_upstream(), dir_.string());
    EXPECT_EQ(m.size(), 2u);
    const upstream_login* alice = m.find("User:alice");
    ASSERT_NE(alice, nullptr);
    EXPECT_NE(alice->tls, nullptr);
    EXPECT_FALSE(alice->enabled());  // no SASL login: the certificate is the login
    const upstream_login* billing = m.find("User:CN=Billing Service,O=example");
    ASSERT_NE(billing, nullptr);
    EXPECT_NE(billing->tls, nullptr);
    EXPECT_NE(billing->tls, alice->tls);
}

TEST_F(ProxyPrincipalMapCertificates, BadCertificatesAreNamedWithoutTheKeyPassword) {
    const auto u = ssl_upstream();
    const std::string wrong_password =
        error_of("User:alice -> CERTIFICATE alice.pem alice-enc.key Not-The-Secret-4\n", u);
    EXPECT_NE(wrong_password.find("map.txt line 1: User:alice: "), std::string::npos)
        << wrong_password;
    EXPECT_NE(wrong_password.find("alice-enc.key"), std::string::npos) << wrong_password;
    EXPECT_EQ(wrong_password.find("Not-The-Secret"), std::string::npos) << wrong_password;
    const std::string mismatch = error_of("User:alice -> CERTIFICATE alice.pem other.key\n", u);
    EXPECT_NE(mismatch.find("does not match"), std::string::npos) << mismatch;
    const std::string missing = error_of("\nUser:alice -> CERTIFICATE nope.pem alice.key\n", u);
    EXPECT_NE(missing.find("map.txt line 2: User:alice: "), std::string::npos) << missing;
    EXPECT_NE(missing.find("nope.pem"), std::string::npos) << missing;
    EXPECT_NE(error_of("User:alice -> CERTIFICATE alice.pem\n", u)
                  .find("expected a certificate file and a key file"),
              std::string::npos);
}

TEST_F(ProxyPrincipalMapCertificates, EachKindOfEntryNeedsAnUpstreamThatCanUseIt) {
    // A certificate on a SASL upstream would not change the principal the broker sees.
    const std::string on_sasl =
        error_of("User:alice -> CERTIFICATE alice.pem alice.key\n", sasl_upstream);
    EXPECT_NE(on_sasl.find("needs upstream.security.protocol=SSL"), std::string::npos) << on_sasl;
    // SASL credentials on an SSL upstream would never be sent.
    const std::string on_ssl = error_of("User:bob -> PLAIN app-bob Secret-5\n", ssl_upstream());
    EXPECT_NE(on_ssl.find("a PLAIN entry needs upstream.security.protocol SASL_PLAINTEXT or "
                          "SASL_SSL"),
              std::string::npos)
        << on_ssl;
    EXPECT_EQ(on_ssl.find("Secret-5"), std::string::npos) << on_ssl;
}

/// Token files for OAUTHBEARER entries, in a folder of their own (the map's folder).
class ProxyPrincipalMapTokens : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = fs::temp_directory_path() /
               ("sluice-proxy-map-tokens-" + std::to_string(::getpid()));
        fs::create_directories(dir_ / "tokens");
        write_token_file("tokens/alice.jwt", "Token-Secret-7.alice.sig\n");
        write_token_file("bob.jwt", "Token-Secret-8.bob.sig");
        write_token_file("blank.jwt", " \r\n\t\n");
        write_token_file("huge.jwt", std::string(64 * 1024 + 1, 'x'));
    }
    static void TearDownTestSuite() { fs::remove_all(dir_); }

    static void write_token_file(const std::string& name, const std::string& text) {
        std::ofstream(dir_ / name, std::ios::binary) << text;
    }
    static std::string token_map_error(const std::string& text,
                                       const principal_map_upstream& u = sasl_upstream) {
        return map_parse_error(text, u, dir_);
    }

    static inline fs::path dir_;
};

TEST_F(ProxyPrincipalMapTokens, EntriesLogInWithTheirTokenFile) {
    const auto m = principal_map::parse(
        "User:alice -> OAUTHBEARER file:tokens/alice.jwt\n"
        "User:bob -> oauthbearer file://" + (dir_ / "bob.jwt").string() + "  \n"
        "User:carol -> PLAIN app-carol Secret-9\n",
        "map.txt", false, sasl_upstream, dir_.string());
    EXPECT_EQ(m.size(), 3u);
    const upstream_login* alice = m.find("User:alice");
    ASSERT_NE(alice, nullptr);
    EXPECT_TRUE(alice->enabled());
    EXPECT_EQ(alice->mechanism, "OAUTHBEARER");
    // Relative to the map's folder, and the token itself not kept: read at each login.
    EXPECT_EQ(alice->token_file, (dir_ / "tokens/alice.jwt").string());
    EXPECT_TRUE(alice->password.empty());
    EXPECT_TRUE(alice->username.empty());
    const upstream_login* bob = m.find("User:bob");
    ASSERT_NE(bob, nullptr);
    EXPECT_EQ(bob->mechanism, "OAUTHBEARER");
    EXPECT_EQ(bob->token_file, (dir_ / "bob.jwt").string());
    EXPECT_TRUE(m.find("User:carol")->token_file.empty());
}

TEST_F(ProxyPrincipalMapTokens, TheExchangeReadsTheFileAtEachLogin) {
    write_token_file("renewed.jwt", "Token-Secret-A");
    const auto m = principal_map::parse("User:alice -> OAUTHBEARER file:renewed.jwt\n",
                                        "map.txt", false, sasl_upstream, dir_.string());
    const upstream_login& alice = *m.find("User:alice");
    EXPECT_EQ(upstream_sasl_exchange(alice).start().what, upstream_sasl_exchange::state::sending);
    // Gone after the map was read: that login fails, naming the file only.
    fs::remove(dir_ / "renewed.jwt");
    upstream_sasl_exchange gone(alice);
    EXPECT_EQ(gone.start().what, upstream_sasl_exchange::state::failed);
    EXPECT_NE(gone.why().find("token file " + (dir_ / "renewed.jwt").string() + ": cannot read"),
              std::string::npos)
        << gone.why();
}

TEST_F(ProxyPrincipalMapTokens, BadEntriesAreNamedWithTheirLineAndNoToken) {
    const std::string no_url = token_map_error("\nUser:alice -> OAUTHBEARER\n");
    EXPECT_NE(no_url.find("map.txt line 2: User:alice: expected one file:PATH URL after "
                          "OAUTHBEARER"),
              std::string::npos)
        << no_url;
    const std::string extra =
        token_map_error("User:alice -> OAUTHBEARER file:bob.jwt Token-Secret-B\n");
    EXPECT_NE(extra.find("line 1: User:alice: expected one file:PATH URL"), std::string::npos)
        << extra;
    // A token pasted where the URL goes is not echoed.
    const std::string pasted = token_map_error("User:alice -> OAUTHBEARER Token-Secret-C.x.y\n");
    EXPECT_NE(pasted.find("line 1: User:alice: OAUTHBEARER: the Kafka proxy reads tokens from "
                          "file: URLs only"),
              std::string::npos)
        << pasted;
    EXPECT_NE(token_map_error("User:alice -> OAUTHBEARER https://idp/token\n")
                  .find("file: URLs only"),
              std::string::npos);
    EXPECT_NE(token_map_error("User:alice -> OAUTHBEARER file:\n").find("names no file"),
              std::string::npos);
    // The files are read with the map, as a CERTIFICATE entry's are.
    const std::string missing = token_map_error(
        "User:a -> PLAIN a Secret-1\n\nUser:alice -> OAUTHBEARER file:nope.jwt\n");
    EXPECT_NE(missing.find("map.txt line 3: User:alice: token file " +
                           (dir_ / "nope.jwt").string() + ": cannot read"),
              std::string::npos)
        << missing;
    EXPECT_NE(token_map_error("User:alice -> OAUTHBEARER file:blank.jwt\n").find(": empty"),
              std::string::npos);
    EXPECT_NE(token_map_error("User:alice -> OAUTHBEARER file:huge.jwt\n")
                  .find("larger than 64 KiB"),
              std::string::npos);
    EXPECT_NE(token_map_error("User:alice -> OAUTHBEARER file:bob.jwt\n"
                              "User:alice -> OAUTHBEARER file:tokens/alice.jwt\n")
                  .find("line 2: User:alice is mapped twice"),
              std::string::npos);
    // SASL it is: an SSL upstream would never send the token.
    principal_map_upstream ssl;
    ssl.tls = auth::tls_client_settings{};
    EXPECT_NE(token_map_error("User:alice -> OAUTHBEARER file:bob.jwt\n", ssl)
                  .find("a OAUTHBEARER entry needs upstream.security.protocol SASL_PLAINTEXT"),
              std::string::npos);
    for (const auto& e : {extra, pasted, missing}) {
        EXPECT_EQ(e.find("Token-Secret"), std::string::npos) << e;
    }
}

TEST_F(ProxyPrincipalMapTokens, LoadTakesRelativeFilesFromTheMapsFolder) {
    write_token_file("principals.map", "User:alice -> OAUTHBEARER file:tokens/alice.jwt\n");
    const auto m =
        principal_map::load((dir_ / "principals.map").string(), false, sasl_upstream);
    ASSERT_NE(m.find("User:alice"), nullptr);
    EXPECT_EQ(m.find("User:alice")->token_file, (dir_ / "tokens/alice.jwt").string());
    write_token_file("principals.map", "# renewed\nUser:alice -> OAUTHBEARER file:gone.jwt\n");
    try {
        principal_map::load((dir_ / "principals.map").string(), false, sasl_upstream);
        FAIL() << "no error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("principals.map line 2: User:alice: token file"),
                  std::string::npos)
            << e.what();
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

std::string login_error_of(const std::map<std::string, std::string>& p) {
    try {
        read_upstream_login(p);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

TEST(ProxyUpstreamLogin, OauthbearerReadsItsTokenFromAFileUrl) {
    const auto login = read_upstream_login({{"security.protocol", "SASL_SSL"},
                                            {"sasl.mechanism", "oauthbearer"},
                                            {"sasl.oauthbearer.token.endpoint.url",
                                             "file:///run/secrets/upstream.jwt"}});
    EXPECT_TRUE(login.enabled());
    EXPECT_EQ(login.mechanism, "OAUTHBEARER");
    EXPECT_EQ(login.token_file, "/run/secrets/upstream.jwt");
    EXPECT_EQ(read_upstream_login({{"security.protocol", "SASL_PLAINTEXT"},
                                   {"sasl.mechanism", "OAUTHBEARER"},
                                   {"sasl.oauthbearer.token.endpoint.url", "file:/t.jwt"}})
                  .token_file,
              "/t.jwt");
    // librdkafka's unsecured JWTs and OIDC token requests are not the proxy's.
    EXPECT_NE(login_error_of({{"security.protocol", "SASL_PLAINTEXT"},
                              {"sasl.mechanism", "OAUTHBEARER"},
                              {"enable.sasl.oauthbearer.unsecure.jwt", "true"}})
                  .find("set upstream.sasl.oauthbearer.token.endpoint.url=file:PATH"),
              std::string::npos);
    EXPECT_NE(login_error_of({{"security.protocol", "SASL_PLAINTEXT"},
                              {"sasl.mechanism", "OAUTHBEARER"},
                              {"sasl.oauthbearer.token.endpoint.url", "https://idp/token"}})
                  .find("file: URLs only"),
              std::string::npos);
    EXPECT_NE(login_error_of({{"security.protocol", "SASL_PLAINTEXT"},
                              {"sasl.mechanism", "GSSAPI"}})
                  .find("PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER only"),
              std::string::npos);
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
