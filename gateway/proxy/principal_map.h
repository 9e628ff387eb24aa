// proxy.principal.map (owned by gateway/proxy): per client principal, the upstream credentials
// the Kafka proxy logs in with on that client's upstream connections instead of the gateway's
// own upstream.sasl.* ("authentication swapping"), so that the cluster's own ACLs and quotas
// see each client as its own upstream user. A principal without an entry uses the gateway's
// credentials, or is refused (proxy.principal.map.unmapped=deny: its SASL login fails at the
// gateway; on a listener without SASL its connection closes at its first request).
//
// File (UTF-8 text): one mapping a line; blank lines and lines starting with # are skipped.
//
//     User:alice -> SCRAM-SHA-512 app-alice the password, the rest of the line
//     User:bob -> CERTIFICATE certs/app-bob.pem certs/app-bob.key the key's password, if any
//     User:carol -> OAUTHBEARER file:tokens/app-carol.jwt
//
// the client principal as the ACLs name it ("User:NAME": a SASL user, a certificate's mapped
// name, User:ANONYMOUS), "->", then either the upstream SASL mechanism (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512), the upstream user name and the password (the rest of the line, blanks around
// it removed), or OAUTHBEARER and a file:PATH URL (file:///PATH too) naming the file that
// holds the token (read at each login and re-authentication as upstream.sasl.oauthbearer.
// token.endpoint.url's is; the cluster takes the token's subject as the principal), or
// CERTIFICATE, a client certificate file (PEM, the chain, leaf first), its key file (PEM) and
// the key's password if it has one (the rest of the line). A relative file name is taken from
// the map file's folder; file names hold no blanks. SASL and OAUTHBEARER entries need an
// upstream with SASL (upstream.security.protocol SASL_PLAINTEXT or SASL_SSL), certificate
// entries one with TLS and no SASL (SSL: the broker takes the certificate's subject as the
// principal); each certificate entry's context is built from upstream.ssl.* with its
// certificate and key instead of the gateway's, when the map is read (a bad file or a key that
// does not match stops the reading); likewise each token file is read when the map is read (one
// that cannot be read, is empty or larger than 64 KiB stops the reading; the token is not
// kept), and one that later goes missing fails that login only. Passwords and tokens never
// appear in a log line or an error message.
//
// Lifecycle: read by run_server at start-up (a bad file stops the start) and again on SIGHUP
// (principal_map_source: new logins and upstream connections use the new map, open upstream
// connections keep the login they made; a bad file keeps the map in use). A principal_map is
// read-only once made, so thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/proxy/upstream_login.h"

namespace sluice::gateway::proxy {

/// What the upstream connections speak, which decides the entries a map may hold.
struct principal_map_upstream {
    /// upstream.security.protocol SASL_PLAINTEXT or SASL_SSL: entries give SASL credentials.
    bool sasl = false;
    /// upstream.ssl.* with upstream.security.protocol SSL: entries give client certificates,
    /// each built into a context from these settings with its own certificate and key.
    std::optional<auth::tls_client_settings> tls;
};

class principal_map {
public:
    /// Empty: every principal uses the gateway's own credentials.
    principal_map() = default;

    /// Reads the file at `path`. Throws std::invalid_argument naming the file and line (and
    /// never a password or token) for a line that does not parse, an unknown mechanism, an
    /// entry the upstream cannot use, a certificate, key or token file that does not load, a
    /// principal given twice or a file that cannot be read.
    static principal_map load(const std::string& path, bool deny_unmapped,
                              const principal_map_upstream& upstream);
    /// Parses the text of such a file (`source` names it in errors; relative certificate and
    /// key files are taken from `dir`, the current directory when empty).
    static principal_map parse(std::string_view text, const std::string& source,
                               bool deny_unmapped, const principal_map_upstream& upstream,
                               const std::string& dir = {});

    /// The upstream credentials of `principal`, or nullptr when it has no entry.
    const upstream_login* find(std::string_view principal) const;
    /// Whether `principal` may use the proxy: it has an entry, or unmapped ones use the
    /// gateway's credentials.
    bool admits(std::string_view principal) const {
        return !deny_unmapped_ || find(principal) != nullptr;
    }
    bool deny_unmapped() const { return deny_unmapped_; }
    std::size_t size() const { return entries_.size(); }

private:
    std::map<std::string, upstream_login, std::less<>> entries_;
    bool deny_unmapped_ = false;
};

/// The map in use: replaced as a whole when the file is read again, each reader holding the
/// map it took for as long as it uses it. Thread-safe.
class principal_map_source {
public:
    explicit principal_map_source(principal_map initial = {})
        : current_(std::make_shared<const principal_map>(std::move(initial))) {}

    std::shared_ptr<const principal_map> current() const {
        std::lock_guard lock(mu_);
        return current_;
    }
    void replace(principal_map next) {
        auto made = std::make_shared<const principal_map>(std::move(next));
        std::lock_guard lock(mu_);
        current_ = std::move(made);
    }

private:
    mutable std::mutex mu_;
    std::shared_ptr<const principal_map> current_;
};

}  // namespace sluice::gateway::proxy
