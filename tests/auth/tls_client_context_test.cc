// The client TLS context of the Kafka proxy's upstream connections: built from librdkafka's
// properties (a password-protected key, bad files refused with the property named), and real
// handshakes in memory against build_server_context's server: the broker's name checked (a
// name and an IP literal; none turns it off), SNI sent for names only, an untrusted CA and a
// missing required client certificate refused.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <boost/asio/ssl/error.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "auth/tls/tls_client_context.h"
#include "auth/tls/tls_context.h"

namespace sluice::auth {
namespace {

namespace fs = std::filesystem;

void run_openssl(const std::string& command) {
    ASSERT_EQ(std::system((command + " >/dev/null 2>&1").c_str()), 0) << command;
}

/// What a handshake in memory came to.
struct handshake_outcome {
    bool ok = false;
    std::string client_failure;  // client_handshake_failure's line when !ok
    std::string server_name;     // the SNI the server saw; empty for none
};

class TlsClientContext : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = fs::temp_directory_path() /
               ("sluice-tls-client-test-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        const std::string d = dir_.string();
        for (const char* ca : {"ca", "other-ca"}) {
            run_openssl("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" +
                        std::string(ca) + " -keyout " + d + "/" + ca + ".key -out " + d + "/" +
                        ca + ".pem");
        }
        std::ofstream(dir_ / "san.ext") << "subjectAltName=DNS:broker-1.example,IP:127.0.0.1\n";
        for (const char* name : {"server", "client"}) {
            const std::string n = d + "/" + name;
            run_openssl("openssl req -newkey rsa:2048 -nodes -subj /CN=" + std::string(name) +
                        " -keyout " + n + ".key -out " + n + ".csr");
            run_openssl("openssl x509 -req -days 2 -in " + n + ".csr -CA " + d + "/ca.pem -CAkey " +
                        d + "/ca.key -set_serial 0x77 -out " + n + ".pem" +
                        (std::string(name) == "server" ? " -extfile " + d + "/san.ext" : ""));
        }
        run_openssl("openssl pkey -in " + d + "/client.key -aes256 -passout pass:Secret-1 -out " +
                    d + "/client-enc.key");
    }
    static void TearDownTestSuite() { fs::remove_all(dir_); }

    static std::string path(const char* name) { return (dir_ / name).string(); }

    static tls_client_settings good() {
        tls_client_settings s;
        s.ca = path("ca.pem");
        return s;
    }

    static std::string error_of(const tls_client_settings& s) {
        try {
            build_client_context(s);
        } catch (const tls_error& e) {
            return e.what();
        }
        return "";
    }

    /// A handshake of a client from `client` to `host` with a server on server.pem, over a
    /// BIO pair.
    static handshake_outcome handshake(const tls_client_settings& client, const std::string& host,
                                       client_auth server_client_auth = client_auth::none) {
        tls_settings ss;
        ss.certificate = path("server.pem");
        ss.key = path("server.key");
        ss.ca = path("ca.pem");
        ss.client = server_client_auth;
        auto server_ctx = build_server_context(ss);
        auto client_ctx = build_client_context(client);
        SSL* c = SSL_new(client_ctx->ssl.native_handle());
        SSL* s = SSL_new(server_ctx->ssl.native_handle());
        BIO* cb = nullptr;
        BIO* sb = nullptr;
        BIO_new_bio_pair(&cb, 0, &sb, 0);
        SSL_set_bio(c, cb, cb);
        SSL_set_bio(s, sb, sb);
        SSL_set_connect_state(c);
        SSL_set_accept_state(s);
        handshake_outcome out;
        std::string why;
        EXPECT_TRUE(prepare_client_connection(*client_ctx, c, host, why)) << why;
        bool client_done = false;
        bool server_done = false;
        bool failed = false;
        for (int i = 0; i < 50 && !failed && !(client_done && server_done); ++i) {
            if (!client_done) {
                const int r = SSL_do_handshake(c);
                client_done = r == 1;
                failed = r <= 0 && SSL_get_error(c, r) != SSL_ERROR_WANT_READ;
            }
            if (!server_done && !failed) {
                const int r = SSL_do_handshake(s);
                server_done = r == 1;
                failed = r <= 0 && SSL_get_error(s, r) != SSL_ERROR_WANT_READ;
            }
        }
        if (client_done && server_done) {
            // TLS 1.3: a server refusing the client certificate says so after the client's
            // handshake finished, on the first read.
            char byte = 0;
            SSL_write(c, "x", 1);
            failed = SSL_read(s, &byte, 1) <= 0;
        }
        out.ok = client_done && server_done && !failed;
        if (!out.ok) {
            out.client_failure = client_handshake_failure(
                c, boost::system::error_code(static_cast<int>(ERR_get_error()),
                                             boost::asio::error::get_ssl_category()));
        }
        ERR_clear_error();
        if (const char* sni = SSL_get_servername(s, TLSEXT_NAMETYPE_host_name)) {
            out.server_name = sni;
        }
        SSL_free(c);
        SSL_free(s);
        return out;
    }

    static inline fs::path dir_;
};

TEST_F(TlsClientContext, HandshakeWithTheBrokersNameSucceedsAndSendsSni) {
    const auto r = handshake(good(), "broker-1.example");
    EXPECT_TRUE(r.ok) << r.client_failure;
    EXPECT_EQ(r.server_name, "broker-1.example");
}

TEST_F(TlsClientContext, IpLiteralIsCheckedAgainstTheIpAddressAndSendsNoSni) {
    const auto r = handshake(good(), "127.0.0.1");
    EXPECT_TRUE(r.ok) << r.client_failure;
    EXPECT_EQ(r.server_name, "");
    const auto wrong = handshake(good(), "127.0.0.2");
    EXPECT_FALSE(wrong.ok);
    EXPECT_EQ(wrong.client_failure, "certificate verify failed: IP address mismatch");
}

TEST_F(TlsClientContext, AnotherNameIsRefusedUnlessIdentificationIsNone) {
    const auto r = handshake(good(), "broker-2.example");
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.client_failure, "certificate verify failed: hostname mismatch");
    auto none = good();
    none.verify_host = false;
    const auto accepted = handshake(none, "broker-2.example");
    EXPECT_TRUE(accepted.ok) << accepted.client_failure;
    EXPECT_EQ(accepted.server_name, "broker-2.example");  // SNI still sent
}

TEST_F(TlsClientContext, UntrustedCaIsRefused) {
    auto s = good();
    s.ca = path("other-ca.pem");
    const auto r = handshake(s, "broker-1.example");
    EXPECT_FALSE(r.ok);
    // (The server sends its CA along: OpenSSL builds the chain from its store.)
    EXPECT_EQ(r.client_failure,
              "certificate verify failed: self-signed certificate in certificate chain");
}

TEST_F(TlsClientContext, InLineCaPemIsTrusted) {
    std::ifstream in(path("ca.pem"));
    tls_client_settings s;
    s.ca_pem.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    EXPECT_TRUE(handshake(s, "broker-1.example").ok);
}

TEST_F(TlsClientContext, ClientCertificateWithAPasswordSatisfiesARequiringServer) {
    auto s = good();
    s.certificate = path("client.pem");
    s.key = path("client-enc.key");
    s.key_password = "Secret-1";
    EXPECT_TRUE(handshake(s, "broker-1.example", client_auth::required).ok);
    EXPECT_FALSE(handshake(good(), "broker-1.example", client_auth::required).ok);
}

TEST_F(TlsClientContext, WrongKeyPasswordIsRefusedWithoutEchoingIt) {
    auto s = good();
    s.certificate = path("client.pem");
    s.key = path("client-enc.key");
    s.key_password = "Not-The-Password";
    const std::string e = error_of(s);
    EXPECT_NE(e.find("ssl.key.location " + path("client-enc.key") +
                     ": not a PEM private key, or ssl.key.password is wrong"),
              std::string::npos)
        << e;
    EXPECT_EQ(e.find("Not-The-Password"), std::string::npos) << e;
    s.key_password.clear();
    EXPECT_NE(error_of(s).find("protected by a passphrase: ssl.key.password"), std::string::npos);
}

TEST_F(TlsClientContext, BadSettingsAreNamed) {
    auto s = good();
    s.ca_pem = "-----BEGIN CERTIFICATE-----\n";
    EXPECT_NE(error_of(s).find("ssl.ca.location and ssl.ca.pem are both set"),
              std::string::npos);
    s = good();
    s.ca = path("absent.pem");
    EXPECT_NE(error_of(s).find("ssl.ca.location " + path("absent.pem") + ": cannot read"),
              std::string::npos);
    s = good();
    s.ca = path("client.key");
    EXPECT_NE(error_of(s).find("no PEM certificate"), std::string::npos);
    s = good();
    s.certificate = path("client.pem");
    EXPECT_NE(error_of(s).find("ssl.certificate.location is set without ssl.key.location"),
              std::string::npos);
    s.key = path("server.key");
    EXPECT_NE(error_of(s).find("does not match the certificate"), std::string::npos);
    s = good();
    s.cipher_suites = "NO-SUCH-CIPHER";
    EXPECT_NE(error_of(s).find("ssl.cipher.suites NO-SUCH-CIPHER"), std::string::npos);
}

TEST_F(TlsClientContext, WithoutCaTheSystemTrustStoreIsUsed) {
    // The test CA is not in it: the broker's certificate is refused.
    const auto r = handshake(tls_client_settings{}, "broker-1.example");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.client_failure.find("certificate verify failed"), std::string::npos)
        << r.client_failure;
}

}  // namespace
}  // namespace sluice::auth
