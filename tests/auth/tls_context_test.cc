// TLS context building from PEM files made here with the openssl command line: the good case,
// each kind of bad file, and the reload that keeps the old context on failure.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "auth/tls/tls_context.h"

namespace sluice::auth {
namespace {

namespace fs = std::filesystem;

void run(const std::string& command) {
    ASSERT_EQ(std::system((command + " >/dev/null 2>&1").c_str()), 0) << command;
}

/// A CA, a server certificate it signs (serial 1001), a second one (serial 1002) and an
/// unrelated key, in a temporary directory shared by the tests of this file.
class TlsContext : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = fs::temp_directory_path() / ("sluice-tls-test-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        const std::string d = dir_.string();
        run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout " + d +
            "/ca.key -out " + d + "/ca.pem");
        for (const char* serial : {"1001", "1002"}) {
            const std::string n = d + "/server" + serial;
            run("openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout " + n +
                ".key -out " + n + ".csr");
            run("openssl x509 -req -days 2 -in " + n + ".csr -CA " + d + "/ca.pem -CAkey " + d +
                "/ca.key -set_serial 0x" + serial + " -out " + n + ".pem");
        }
        run("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out " + d +
            "/other.key");
        std::ofstream(dir_ / "garbage.pem") << "-----BEGIN CERTIFICATE-----\nnot base64!\n"
                                               "-----END CERTIFICATE-----\n";
    }
    static void TearDownTestSuite() { fs::remove_all(dir_); }

    static std::string path(const char* name) { return (dir_ / name).string(); }

    static tls_settings good() {
        tls_settings s;
        s.certificate = path("server1001.pem");
        s.key = path("server1001.key");
        s.ca = path("ca.pem");
        return s;
    }

    static std::string error_of(const tls_settings& s) {
        try {
            build_server_context(s);
        } catch (const tls_error& e) {
            return e.what();
        }
        return "";
    }

    static inline fs::path dir_;
};

TEST_F(TlsContext, BuildsFromMatchingCertificateAndKey) {
    auto ctx = build_server_context(good());
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ctx->serial, "1001");
    EXPECT_EQ(SSL_CTX_get_min_proto_version(ctx->ssl.native_handle()), TLS1_2_VERSION);
}

TEST_F(TlsContext, MissingFileIsNamed) {
    auto s = good();
    s.key = path("absent.key");
    const std::string e = error_of(s);
    EXPECT_NE(e.find("ssl.key.location " + path("absent.key") + ": cannot read"),
              std::string::npos)
        << e;
}

TEST_F(TlsContext, UnsetCertificateIsNamed) {
    auto s = good();
    s.certificate.clear();
    EXPECT_NE(error_of(s).find("ssl.certificate.location is not set"), std::string::npos);
}

TEST_F(TlsContext, KeyThatDoesNotMatchIsRefused) {
    auto s = good();
    s.key = path("other.key");
    EXPECT_NE(error_of(s).find("does not match the certificate"), std::string::npos);
}

TEST_F(TlsContext, BadPemCertificateIsRefused) {
    auto s = good();
    s.certificate = path("garbage.pem");
    EXPECT_NE(error_of(s).find(path("garbage.pem") + ": no PEM certificate"), std::string::npos);
}

TEST_F(TlsContext, BadPemKeyIsRefused) {
    auto s = good();
    s.key = path("ca.pem");  // a certificate, not a key
    EXPECT_NE(error_of(s).find("not a PEM private key"), std::string::npos);
}

TEST_F(TlsContext, ClientAuthWithoutCaIsRefused) {
    auto s = good();
    s.ca.clear();
    s.client = client_auth::required;
    EXPECT_NE(error_of(s).find("needs ssl.ca.location"), std::string::npos);
}

TEST_F(TlsContext, BadPrincipalRulesAreRefused) {
    auto s = good();
    s.principal_rules = "RULE:oops";
    EXPECT_NE(error_of(s).find("ssl.principal.mapping.rules"), std::string::npos);
}

TEST_F(TlsContext, ParsesClientAuthValues) {
    EXPECT_EQ(parse_client_auth("none"), client_auth::none);
    EXPECT_EQ(parse_client_auth("requested"), client_auth::requested);
    EXPECT_EQ(parse_client_auth("required"), client_auth::required);
    EXPECT_THROW(parse_client_auth("always"), tls_error);
}

TEST_F(TlsContext, ReloadSwapsInTheNewCertificateAndKeepsTheOldOnFailure) {
    const fs::path cert = dir_ / "live.pem";
    const fs::path key = dir_ / "live.key";
    fs::copy_file(path("server1001.pem"), cert, fs::copy_options::overwrite_existing);
    fs::copy_file(path("server1001.key"), key, fs::copy_options::overwrite_existing);
    tls_settings s = good();
    s.certificate = cert.string();
    s.key = key.string();
    tls_context_holder holder(s);
    auto first = holder.current();
    EXPECT_EQ(first->serial, "1001");

    // A bad key: the old context stays.
    fs::copy_file(path("other.key"), key, fs::copy_options::overwrite_existing);
    EXPECT_THROW(holder.reload(), tls_error);
    EXPECT_EQ(holder.current(), first);

    fs::copy_file(path("server1002.pem"), cert, fs::copy_options::overwrite_existing);
    fs::copy_file(path("server1002.key"), key, fs::copy_options::overwrite_existing);
    holder.reload();
    EXPECT_EQ(holder.current()->serial, "1002");
    EXPECT_EQ(first->serial, "1001");  // a connection holding the old one keeps it intact
}

}  // namespace
}  // namespace sluice::auth
