#include "auth/tls/tls_context.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "auth/tls/openssl_support.h"

namespace sluice::auth {
namespace {

/// Mozilla's "intermediate" TLS 1.2 list: ECDHE key exchange, AEAD ciphers only.
constexpr const char* tls12_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

/// The whole file, or tls_error naming the setting, the file and why it cannot be read.
std::string read_file(const std::string& setting, const std::string& path) {
    if (path.empty()) {
        throw tls_error(setting + " is not set");
    }
    return openssl::read_file(setting, path);
}

std::string serial_hex(X509* cert) {
    const ASN1_INTEGER* serial = X509_get0_serialNumber(cert);
    BIGNUM* bn = ASN1_INTEGER_to_BN(serial, nullptr);
    if (bn == nullptr) {
        return "?";
    }
    char* hex = BN_bn2hex(bn);
    std::string out = hex ? hex : "?";
    OPENSSL_free(hex);
    BN_free(bn);
    return out;
}

}  // namespace

client_auth parse_client_auth(const std::string& text) {
    if (text == "none") {
        return client_auth::none;
    }
    if (text == "requested") {
        return client_auth::requested;
    }
    if (text == "required") {
        return client_auth::required;
    }
    throw tls_error("ssl.client.auth: expected none, requested or required, got '" + text + "'");
}

std::shared_ptr<tls_server_context> build_server_context(const tls_settings& s) {
    ERR_clear_error();
    const std::string cert_pem = read_file("ssl.certificate.location", s.certificate);
    const std::string key_pem = read_file("ssl.key.location", s.key);

    std::vector<openssl::x509_ptr> chain;
    {
        auto bio = openssl::memory_bio(cert_pem);
        while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, openssl::no_passphrase, nullptr)) {
            chain.emplace_back(c);
        }
        ERR_clear_error();  // the end of the file reads as an error
    }
    if (chain.empty()) {
        throw tls_error("ssl.certificate.location " + s.certificate +
                        ": no PEM certificate in the file");
    }
    openssl::pkey_ptr key;
    {
        auto bio = openssl::memory_bio(key_pem);
        key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, openssl::no_passphrase, nullptr));
        if (!key) {
            throw tls_error("ssl.key.location " + s.key +
                            ": not a PEM private key (or one protected by a passphrase): " +
                            openssl::reason());
        }
    }
    if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
        ERR_clear_error();
        throw tls_error("ssl.key.location " + s.key + ": the key does not match the certificate " +
                        s.certificate);
    }

    auto out = std::make_shared<tls_server_context>();
    try {
        out->principals = principal_mapper(s.principal_rules);
    } catch (const principal_rules_error& e) {
        throw tls_error(e.what());
    }
    out->client = s.client;
    out->serial = serial_hex(chain.front().get());
    SSL_CTX* ctx = out->ssl.native_handle();
    // A peer closing TCP without close_notify reads as a plain end of input: every protocol
    // served here frames its own messages, so a truncation cannot pass as a whole message.
    SSL_CTX_set_options(ctx, SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1 |
                                 SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_cipher_list(ctx, tls12_ciphers) != 1) {
        throw tls_error("TLS context: " + openssl::reason());
    }
    if (SSL_CTX_use_certificate(ctx, chain.front().get()) != 1) {
        throw tls_error("ssl.certificate.location " + s.certificate + ": " + openssl::reason());
    }
    for (std::size_t i = 1; i < chain.size(); ++i) {
        // add0 takes ownership on success.
        if (SSL_CTX_add0_chain_cert(ctx, chain[i].get()) != 1) {
            throw tls_error("ssl.certificate.location " + s.certificate + ": " +
                            openssl::reason());
        }
        chain[i].release();
    }
    if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        throw tls_error("ssl.key.location " + s.key + ": the key does not match the certificate " +
                        s.certificate);
    }

    if (!s.ca.empty()) {
        const std::string ca_pem = read_file("ssl.ca.location", s.ca);
        X509_STORE* store = SSL_CTX_get_cert_store(ctx);
        STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
        int count = 0;
        auto bio = openssl::memory_bio(ca_pem);
        while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, openssl::no_passphrase, nullptr)) {
            openssl::x509_ptr owned(c);
            X509_STORE_add_cert(store, c);
            if (X509_NAME* n = X509_NAME_dup(X509_get_subject_name(c))) {
                sk_X509_NAME_push(names, n);
            }
            ++count;
        }
        ERR_clear_error();
        if (count == 0) {
            sk_X509_NAME_pop_free(names, X509_NAME_free);
            throw tls_error("ssl.ca.location " + s.ca + ": no PEM certificate in the file");
        }
        SSL_CTX_set_client_CA_list(ctx, names);  // takes ownership
    } else if (s.client != client_auth::none) {
        throw tls_error("ssl.client.auth=" +
                        std::string(s.client == client_auth::required ? "required" : "requested") +
                        " needs ssl.ca.location (the CA that signs client certificates)");
    }
    int mode = SSL_VERIFY_NONE;
    if (s.client == client_auth::requested) {
        mode = SSL_VERIFY_PEER;
    } else if (s.client == client_auth::required) {
        mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    }
    SSL_CTX_set_verify(ctx, mode, nullptr);
    // Session resumption with client certificates needs a session id context.
    static const unsigned char sid[] = "sluice";
    SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
    return out;
}

std::optional<std::string> peer_subject(SSL* ssl) {
    X509* cert = SSL_get1_peer_certificate(ssl);
    if (cert == nullptr) {
        return std::nullopt;
    }
    openssl::x509_ptr owned(cert);
    openssl::bio_ptr bio(BIO_new(BIO_s_mem()));
    // RFC 2253, but UTF-8 kept as is rather than escaped byte by byte.
    X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0,
                       XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, n > 0 ? static_cast<std::size_t>(n) : 0);
}

tls_context_holder::tls_context_holder(tls_settings s)
    : settings_(std::move(s)), current_(build_server_context(settings_)) {}

std::shared_ptr<tls_server_context> tls_context_holder::current() const {
    std::lock_guard lock(mutex_);
    return current_;
}

void tls_context_holder::reload() {
    auto fresh = build_server_context(settings_);
    std::lock_guard lock(mutex_);
    current_ = std::move(fresh);
}

}  // namespace sluice::auth
