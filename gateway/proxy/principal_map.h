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
//
// the client principal as the ACLs name it ("User:NAME": a SASL user, a certificate's mapped
// name, User:ANONYMOUS), "->", the upstream SASL mechanism (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512), the upstream user name, and the password: the rest of the line, blanks around
// it removed. Passwords never appear in a log line or an error message.
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
#include <string>
#include <string_view>

#include "gateway/proxy/upstream_login.h"

namespace sluice::gateway::proxy {

class principal_map {
public:
    /// Empty: every principal uses the gateway's own credentials.
    principal_map() = default;

    /// Reads the file at `path`. Throws std::invalid_argument naming the file and line (and
    /// never the password) for a line that does not parse, an unknown mechanism, a principal
    /// given twice or a file that cannot be read.
    static principal_map load(const std::string& path, bool deny_unmapped);
    /// Parses the text of such a file (`source` names it in errors).
    static principal_map parse(std::string_view text, const std::string& source,
                               bool deny_unmapped);

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
