#include "auth/tls/tls_client_context.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "auth/tls/openssl_support.h"

namespace sluice::auth {
namespace {

// (Names carry a client_ prefix: the unity build shares one namespace with tls_context.cc.)

/// The PEM text of a property given as a file (`location`) or in line (`pem`); empty when
/// neither is set. Both set is refused, as librdkafka refuses it.
std::string client_pem(const std::string& name, const std::string& location,
                       const std::string& pem) {
    if (!location.empty() && !pem.empty()) {
        throw tls_error("ssl." + name + ".location and ssl." + name +
                        ".pem are both set: give one");
    }
    if (!pem.empty()) {
        return pem;
    }
    return location.empty() ? std::string() : openssl::read_file("ssl." + name + ".location",
                                                                location);
}

/// Where a PEM property came from, for error messages.
std::string client_source(const std::string& name, const std::string& location) {
    return location.empty() ? "ssl." + name + ".pem" : "ssl." + name + ".location " + location;
}

/// Hands OpenSSL ssl.key.password (`user`: the std::string); never prompts on a terminal.
int client_key_password(char* buf, int size, int /*rwflag*/, void* user) {
    const auto* password = static_cast<const std::string*>(user);
    if (password == nullptr || password->empty() ||
        password->size() > static_cast<std::size_t>(size)) {
        return -1;
    }
    std::memcpy(buf, password->data(), password->size());
    return static_cast<int>(password->size());
}

std::vector<openssl::x509_ptr> client_certificates(const std::string& pem) {
    std::vector<openssl::x509_ptr> out;
    auto bio = openssl::memory_bio(pem);
    while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, openssl::no_passphrase, nullptr)) {
        out.emplace_back(c);
    }
    ERR_clear_error();  // the end of the text reads as an error
    return out;
}

bool client_is_directory(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void client_trust(SSL_CTX* ctx, const tls_client_settings& s) {
    if (!s.ca.empty() && !s.ca_pem.empty()) {
        throw tls_error("ssl.ca.location and ssl.ca.pem are both set: give one");
    }
    // compat: librdkafka's ssl.ca.location=probe looks in the usual places; OpenSSL's default
    // paths are those of this system.
    if ((s.ca.empty() || s.ca == "probe") && s.ca_pem.empty()) {
        if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
            throw tls_error("the system's trust store: " + openssl::reason());
        }
        return;
    }
    if (!s.ca.empty() && client_is_directory(s.ca)) {
        if (SSL_CTX_load_verify_locations(ctx, nullptr, s.ca.c_str()) != 1) {
            throw tls_error("ssl.ca.location " + s.ca + ": " + openssl::reason());
        }
        return;
    }
    const std::string pem = client_pem("ca", s.ca, s.ca_pem);
    const auto certs = client_certificates(pem);
    if (certs.empty()) {
        throw tls_error(client_source("ca", s.ca) + ": no PEM certificate in it");
    }
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    for (const auto& c : certs) {
        if (X509_STORE_add_cert(store, c.get()) != 1) {
            throw tls_error(client_source("ca", s.ca) + ": " + openssl::reason());
        }
    }
}

void client_identity(SSL_CTX* ctx, const tls_client_settings& s) {
    const std::string cert_pem = client_pem("certificate", s.certificate, s.certificate_pem);
    const std::string key_pem = client_pem("key", s.key, s.key_pem);
    if (cert_pem.empty() && key_pem.empty()) {
        return;  // no client certificate
    }
    if (cert_pem.empty() || key_pem.empty()) {
        throw tls_error(cert_pem.empty()
                            ? "ssl.key.location is set without ssl.certificate.location"
                            : "ssl.certificate.location is set without ssl.key.location");
    }
    auto chain = client_certificates(cert_pem);
    if (chain.empty()) {
        throw tls_error(client_source("certificate", s.certificate) +
                        ": no PEM certificate in it");
    }
    openssl::pkey_ptr key;
    {
        auto bio = openssl::memory_bio(key_pem);
        std::string password = s.key_password;
        key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, client_key_password, &password));
        if (!key) {
            throw tls_error(client_source("key", s.key) +
                            (s.key_password.empty()
                                 ? ": not a PEM private key (or one protected by a passphrase: "
                                   "ssl.key.password): "
                                 : ": not a PEM private key, or ssl.key.password is wrong: ") +
                            openssl::reason());
        }
    }
    if (SSL_CTX_use_certificate(ctx, chain.front().get()) != 1) {
        throw tls_error(client_source("certificate", s.certificate) + ": " +
                        openssl::reason());
    }
    for (std::size_t i = 1; i < chain.size(); ++i) {
        // add0 takes ownership on success.
        if (SSL_CTX_add0_chain_cert(ctx, chain[i].get()) != 1) {
            throw tls_error(client_source("certificate", s.certificate) + ": " +
                            openssl::reason());
        }
        chain[i].release();
    }
    if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        throw tls_error(client_source("key", s.key) + ": the key does not match the certificate " +
                        client_source("certificate", s.certificate));
    }
}

}  // namespace

std::shared_ptr<tls_client_context> build_client_context(const tls_client_settings& s) {
    ERR_clear_error();
    auto out = std::make_shared<tls_client_context>();
    out->verify_host = s.verify_host && s.verify_certificate;
    SSL_CTX* ctx = out->ssl.native_handle();
    // A broker closing TCP without close_notify reads as a plain end of input: Kafka frames
    // carry their own sizes, so a truncation cannot pass as a whole response.
    SSL_CTX_set_options(ctx, SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1 |
                                 SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        throw tls_error("TLS context: " + openssl::reason());
    }
    if (!s.cipher_suites.empty() && SSL_CTX_set_cipher_list(ctx, s.cipher_suites.c_str()) != 1) {
        throw tls_error("ssl.cipher.suites " + s.cipher_suites + ": " + openssl::reason());
    }
    if (!s.curves.empty() && SSL_CTX_set1_curves_list(ctx, s.curves.c_str()) != 1) {
        throw tls_error("ssl.curves.list " + s.curves + ": " + openssl::reason());
    }
    if (!s.sigalgs.empty() && SSL_CTX_set1_sigalgs_list(ctx, s.sigalgs.c_str()) != 1) {
        throw tls_error("ssl.sigalgs.list " + s.sigalgs + ": " + openssl::reason());
    }
    if (s.verify_certificate) {
        client_trust(ctx, s);
    }
    SSL_CTX_set_verify(ctx, s.verify_certificate ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
    client_identity(ctx, s);
    return out;
}

bool prepare_client_connection(const tls_client_context& ctx, SSL* ssl, const std::string& host,
                               std::string& why) {
    boost::system::error_code ec;
    const auto ip = boost::asio::ip::make_address(host, ec);
    const bool literal = !ec;
    // RFC 6066: SNI carries host names only, never an address.
    if (!literal && SSL_set_tlsext_host_name(ssl, host.c_str()) != 1) {
        why = "server name " + host + ": " + openssl::reason();
        return false;
    }
    if (!ctx.verify_host) {
        return true;
    }
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    const int ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(param, ip.to_string().c_str())
                           : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
    if (ok != 1) {
        why = "endpoint identification of " + host + ": " + openssl::reason();
        return false;
    }
    return true;
}

std::string client_handshake_failure(SSL* ssl, const boost::system::error_code& ec) {
    const long verified = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (verified != X509_V_OK) {
        return "certificate verify failed: " +
               std::string(X509_verify_cert_error_string(verified));
    }
    return ec.message();
}

}  // namespace sluice::auth
