// Server-side TLS for every listener: an OpenSSL context (Boost.Asio ssl::context) built from
// PEM files, and the holder that swaps in a rebuilt context on reload. The gateway's
// listeners hand each new connection the holder's current context; a connection keeps the
// context it started with. Built by run_server at start; reloaded on SIGHUP.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include <boost/asio/ssl/context.hpp>

#include "auth/tls/principal_mapper.h"

namespace sluice::auth {

/// ssl.client.auth (Kafka's values): whether a client certificate is asked for.
enum class client_auth {
    none,       // not asked for
    requested,  // asked for; a client without one is still served
    required,   // a client without a valid one is refused in the handshake
};

/// Parses none|requested|required; throws tls_error otherwise.
client_auth parse_client_auth(const std::string& text);

/// The TLS settings of one listener (librdkafka's and Kafka's names in the comments).
struct tls_settings {
    std::string certificate;  // ssl.certificate.location: PEM, the chain, leaf first
    std::string key;          // ssl.key.location: PEM, unencrypted
    std::string ca;           // ssl.ca.location: PEM, CAs that sign client certificates
    client_auth client = client_auth::none;  // ssl.client.auth
    std::string principal_rules = "DEFAULT";  // ssl.principal.mapping.rules
};

/// Thrown when a context cannot be built; what() names the file and the reason in one line.
class tls_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// One built context with what the connections that use it need to know.
struct tls_server_context {
    boost::asio::ssl::context ssl{boost::asio::ssl::context::tls_server};
    principal_mapper principals;
    client_auth client = client_auth::none;
    /// The serial number of the certificate, hex: for the reload log line.
    std::string serial;
};

/// Builds a server context: TLS 1.2 and 1.3 only, forward-secret AEAD ciphers for TLS 1.2
/// (OpenSSL's TLS 1.3 suites), the certificate chain and key (checked to match), the CA and
/// the client-certificate mode. Throws tls_error.
std::shared_ptr<tls_server_context> build_server_context(const tls_settings& s);

/// The RFC 2253 subject of the peer certificate of `ssl` (most specific part first, as Java's
/// X500Principal.getName() writes it), or nullopt when the peer sent none.
std::optional<std::string> peer_subject(SSL* ssl);

/// The context one listener gives new connections. Created with a built context; reload()
/// builds a new one from the same settings and swaps it in only if that succeeds.
/// Thread-safe: current() and reload() may be called from any thread.
class tls_context_holder {
public:
    /// Builds the first context (throws tls_error).
    explicit tls_context_holder(tls_settings s);

    std::shared_ptr<tls_server_context> current() const;
    /// Rebuilds from the files; on failure the old context stays and the error is thrown
    /// (tls_error naming the file and reason).
    void reload();
    const tls_settings& settings() const { return settings_; }

private:
    const tls_settings settings_;
    mutable std::mutex mutex_;
    std::shared_ptr<tls_server_context> current_;
};

}  // namespace sluice::auth
