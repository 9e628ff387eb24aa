// Client-side TLS (owned by auth/tls): the OpenSSL context the Kafka proxy's upstream
// connections use to reach a TLS cluster, built from librdkafka's property names and meanings
// (ssl.ca.location, ssl.certificate.location, ssl.key.location, ssl.key.password,
// ssl.endpoint.identification.algorithm, ...), so that the same `upstream.ssl.*` settings
// configure the proxy and the gateway's librdkafka clients alike. Built once by run_server;
// immutable afterwards and shared by every upstream connection (thread-safe for that use).
#pragma once

#include <memory>
#include <string>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>

#include "auth/tls/tls_context.h"

namespace sluice::auth {

/// librdkafka's client TLS properties (names in the comments). Either form of the CA, the
/// certificate and the key may be given, not both.
struct tls_client_settings {
    std::string ca;               // ssl.ca.location: a PEM file or a hashed directory
    std::string ca_pem;           // ssl.ca.pem; neither: the system's trust store
    std::string certificate;      // ssl.certificate.location: PEM, the chain, leaf first
    std::string certificate_pem;  // ssl.certificate.pem
    std::string key;              // ssl.key.location: PEM, encrypted or not
    std::string key_pem;          // ssl.key.pem
    std::string key_password;     // ssl.key.password: never logged
    std::string cipher_suites;    // ssl.cipher.suites (OpenSSL's list syntax, TLS 1.2)
    std::string curves;           // ssl.curves.list
    std::string sigalgs;          // ssl.sigalgs.list
    bool verify_certificate = true;  // enable.ssl.certificate.verification
    bool verify_host = true;         // ssl.endpoint.identification.algorithm=https (none: false)
};

/// A built client context and how its connections check the broker's name.
struct tls_client_context {
    boost::asio::ssl::context ssl{boost::asio::ssl::context::tls_client};
    bool verify_host = true;
};

/// Builds a client context: TLS 1.2 and 1.3, the broker's certificate verified against the CA
/// (or the system's trust store), the client certificate and key when given (checked to
/// match). Throws tls_error naming the property, the file and the reason.
std::shared_ptr<tls_client_context> build_client_context(const tls_client_settings& s);

/// Readies `ssl`, a new connection's SSL object, to reach `host` (a name or an IP literal):
/// SNI for a name; with verify_host the certificate must name `host` (a DNS name, or the IP
/// address for an IP literal). False when OpenSSL refuses (reason in `why`).
bool prepare_client_connection(const tls_client_context& ctx, SSL* ssl, const std::string& host,
                               std::string& why);

/// One line on why a client handshake on `ssl` failed with `ec`: the certificate verification
/// result when that was the cause ("certificate verify failed: hostname mismatch").
std::string client_handshake_failure(SSL* ssl, const boost::system::error_code& ec);

}  // namespace sluice::auth
