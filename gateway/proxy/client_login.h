// SASL termination on the Kafka proxy's SASL listeners (owned by gateway/proxy): the proxy
// answers SaslHandshake (v0-v1) and SaslAuthenticate (v0-v2), and the bare token frames that
// follow a SaslHandshake v0, itself, with the same users, mechanisms and auth/sasl exchanges
// the broker mode uses; nothing goes upstream before the login succeeded. Then the connection
// has a principal ("User:NAME") for the policy chain.
//
// As the broker mode (gateway/kafka/sasl_exchange.cc, whose front-specific half this mirrors
// on the proxy's own state): a failed login is answered SASL_AUTHENTICATION_FAILED with a
// message that does not tell whether the user exists, logged once on the "auth" logger,
// audited, counted, slowed after repeated failures from one address (auth::failure_limiter),
// and the connection closes after the answer. Re-authentication (KIP-368) with the same
// mechanism and principal is allowed after a SaslAuthenticate v1+ login.
//
// Lifecycle: one per client connection of a SASL listener. Not thread-safe: the connection's
// thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "auth/failure_limiter.h"
#include "auth/sasl/sasl_server.h"
#include "gateway/core/metrics.h"
#include "gateway/policy/chain.h"
#include "protocol/core/bytes.h"
#include "protocol/kafka/header.h"

namespace sluice::auth {
class credential_store;
class jwt_verifier;
}  // namespace sluice::auth

namespace sluice::gateway::proxy {

class principal_map_source;

/// What SASL termination needs, shared by every connection (run_server owns each of them).
struct client_login_services {
    const auth::credential_store* users = nullptr;
    const auth::jwt_verifier* tokens = nullptr;
    auth::failure_limiter* failures = nullptr;
    metrics_registry* metrics = nullptr;
    /// sasl.enabled.mechanisms
    std::vector<std::string> mechanisms{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"};
    /// The audit line of a failed login goes through the chain.
    policy_chain chain{};
    /// connections.max.reauth.ms (KIP-368): a session's longest life, 0 for none; a token's
    /// expiry ends it sooner.
    std::int64_t max_reauth_ms = 0;
    /// proxy.principal.map with unmapped=deny: a principal it does not admit fails its login.
    const principal_map_source* principals = nullptr;
};

/// One answer of the login: the response frame (size prefix included) and whether the
/// connection closes once it is written.
struct login_answer {
    protocol::writer frame;
    bool close_after = false;
};

class client_login {
public:
    client_login(const client_login_services& svc, std::uint64_t conn_id,
                 boost::asio::ip::tcp::endpoint peer);

    /// Logged in: the principal is set, no exchange is under way and the session has not
    /// ended (KIP-368: connections.max.reauth.ms, a token's expiry).
    bool authenticated() const {
        return !principal_.empty() && !exchange_ &&
               (session_expiry_ == std::chrono::steady_clock::time_point{} ||
                std::chrono::steady_clock::now() < session_expiry_);
    }
    /// "User:NAME" after the first successful login; empty before.
    const std::string& principal() const { return principal_; }
    const std::string& mechanism() const { return mechanism_; }
    /// The next frame is a bare SASL token (after SaslHandshake v0).
    bool expects_raw_token() const { return exchange_ != nullptr && raw_tokens_; }

    /// SaslHandshake; `body` follows the request header.
    login_answer handshake(const protocol::kafka::request_header& h, protocol::bytes_view body);
    /// SaslAuthenticate; `body` follows the request header. May wait (failure_limiter).
    boost::asio::awaitable<login_answer> authenticate(const protocol::kafka::request_header& h,
                                                      protocol::bytes_view body);
    /// A bare token frame (size prefix excluded); nullopt: the login failed, close now.
    boost::asio::awaitable<std::optional<login_answer>> raw_token(protocol::bytes_view token);

private:
    /// Feeds one token to the exchange and acts on its outcome (principal, log, audit, delay).
    boost::asio::awaitable<auth::sasl_step> step(std::string token);

    const client_login_services& svc_;
    std::uint64_t conn_id_;
    boost::asio::ip::tcp::endpoint peer_;
    std::unique_ptr<auth::sasl_server> exchange_;
    bool raw_tokens_ = false;
    bool can_reauthenticate_ = false;
    std::string principal_;
    std::string mechanism_;
    std::int64_t session_lifetime_ms_ = 0;                  // told the client; 0: no limit
    std::chrono::steady_clock::time_point session_expiry_{};  // the epoch: never
};

}  // namespace sluice::gateway::proxy
