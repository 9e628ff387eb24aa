// The policy chain (issue 25; Envoy's filter chain is the model): the one place where a request
// on any front (Kafka, REST, WebSocket, SSE, SQS, the console's /v1 routes, and later the Kafka
// proxy) is authenticated, authorized, throttled and audited. A front describes its request as
// typed facts (request_facts: who asks, the action, the accesses it needs, the quota it counts
// against) and asks policy_chain::decide, which runs the steps in this order:
//
//   request_facts ──> authenticate ──> authorize ──> throttle ──> audit ──> decision
//                     (the principal   (auth::       (quota_meter: (a line per     (a verdict per
//                      the front        authorizer;   the delay     refused access, access, the
//                      established)     off: allow)   earned)       rate-limited    throttle delay)
//                                                                   log line)
//
// then the front executes (or not) and answers in its own protocol. The chain never touches the
// backend and never needs the decoded body beyond the facts, so the Kafka proxy can run it on a
// request it only forwards. What needs the backend's answer first (a listing, Kafka's authorized
// operations) asks the quiet visible(); what a request used (bytes fetched, io-thread time) is
// recorded afterwards with record() and record_request_time().
//
// Hot path: with the authorizer off, authorizing() is false and a front builds no accesses at
// all (decide with no accesses skips the authorize and audit steps in one branch). Every
// string in the facts is a view: the caller keeps what they name alive during the call.
//
// Reaching it: run_server builds one policy_chain over its authorizer and quota meter and
// puts it in services::chain, where the Kafka front (request_context::svc()), http_server,
// sqs_server and the WebSocket and SSE routes take it; services::quotas goes once the Kafka
// front reaches the meter through the chain only.
//
// Owned by gateway/policy; gateway/policy/README.md says how a front uses it.
// API changes after the first commit (kafkapolicy builds on it) are listed here:
//   (none yet)
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>

#include "auth/authorizer.h"
#include "auth/client_quotas.h"

namespace sluice::gateway {

class quota_meter;

/// The front a request came in on. The audit log and the quota metrics name rest and console
/// "http" (as they always have); the others by their own name.
enum class policy_front : std::uint8_t { kafka, rest, websocket, sse, sqs, console };

/// "kafka", "http" (rest, console), "websocket", "sse", "sqs": the audit log's `front`.
std::string_view audit_front_name(policy_front f);

/// What becomes of an access the authorizer denies.
enum class on_denial : std::uint8_t {
    refuse,  ///< the access is refused: one audit line and a (rate-limited) log line
    filter,  ///< the resource is left out of an answer quietly (a listing): nothing written
};

/// Kafka's rules where another grant also lets an access pass (checked first, quietly; the
/// access's own denial is the one reported).
enum class also_passes : std::uint8_t {
    nothing,
    /// The same operation on the cluster: CREATE of a topic (Kafka's CreateTopics and
    /// auto-creation rule; SQS CreateQueue).
    cluster,
    /// WRITE on at least one topic: InitProducerId without a transactional id, whose access is
    /// IDEMPOTENT_WRITE on the cluster (Kafka's rule since 2.8).
    write_on_any_topic,
};

/// The chain's answer for one access.
enum class verdict : std::uint8_t {
    allowed,
    denied,     ///< refused (on_denial::refuse): audited
    hidden,     ///< filtered out quietly (on_denial::filter)
    unchecked,  ///< not reached: an earlier access refused an all-or-nothing request
};

/// One thing a request does: `op` on the resource `type` named `name`. decide() writes
/// `result`; it starts as allowed, so that a front that builds no accesses (the authorizer
/// off) reads every access it would have asked for as allowed.
struct access {
    auth::acl_operation op = auth::acl_operation::unknown;
    auth::resource_type type = auth::resource_type::unknown;
    std::string_view name{};
    on_denial denial = on_denial::refuse;
    also_passes alternative = also_passes::nothing;
    verdict result = verdict::allowed;

    bool allowed() const { return result == verdict::allowed; }
};

/// Shorthands: `op` on the topic, group, transactional id named `name`, or on the cluster.
inline access topic_access(auth::acl_operation op, std::string_view name,
                           on_denial d = on_denial::refuse) {
    return access{op, auth::resource_type::topic, name, d};
}
inline access group_access(auth::acl_operation op, std::string_view name,
                           on_denial d = on_denial::refuse) {
    return access{op, auth::resource_type::group, name, d};
}
inline access transactional_id_access(auth::acl_operation op, std::string_view name,
                                      on_denial d = on_denial::refuse) {
    return access{op, auth::resource_type::transactional_id, name, d};
}
inline access cluster_access(auth::acl_operation op, on_denial d = on_denial::refuse) {
    return access{op, auth::resource_type::cluster, auth::cluster_resource_name, d};
}

/// "Not authorized to WRITE topic a." / "Not authorized to ALTER the cluster." (no principal:
/// the caller knows who it is).
std::string denial_message(const access& a);

/// Who asks, as the front established it: what stays the same across the requests of one
/// connection or stream. Views: the front keeps the strings alive during each call.
struct requester {
    policy_front front = policy_front::kafka;
    /// "User:alice"; "User:ANONYMOUS" when the front authenticates nobody. Empty: the front
    /// has established no principal (a SASL listener before login): decide() refuses.
    std::string_view principal{};
    /// How the principal was established: a SASL mechanism ("SCRAM-SHA-256", "PLAIN",
    /// "OAUTHBEARER"), "mTLS", "basic", "bearer", "session", "sigv4"; empty for none
    /// (ANONYMOUS). For the log and the proxy; it changes no decision.
    std::string_view mechanism{};
    /// The client's address: the audit log's `client` ("ADDRESS:PORT").
    boost::asio::ip::tcp::endpoint peer{};
    /// The authorizer's host for `peer` ("127.0.0.1", IPv4-mapped addresses as IPv4) when the
    /// front keeps it (a connection computes it once); empty: decide() derives it from `peer`.
    std::string_view host{};
    /// The quota client id (Kafka's header client_id); empty on the other fronts (their
    /// <default> client entity applies).
    std::string_view client_id{};
};

/// The authorizer's host of an address: its text, an IPv4-mapped IPv6 address as IPv4.
std::string authorizer_host(const boost::asio::ip::tcp::endpoint& peer);

/// One request as the chain sees it.
struct request_facts {
    requester who{};
    /// The audit log's `api`: the Kafka API ("Produce"), the HTTP route ("POST /topics/{topic}"),
    /// the WebSocket op ("produce", "subscribe"), the SQS action ("SendMessage").
    std::string_view action{};
    /// What the request touches; decide() writes each one's verdict. Empty: nothing to
    /// authorize (or the authorizer is off and the front skipped building them).
    std::span<access> accesses{};
    /// One refused access refuses the whole request (HTTP, SQS, WebSocket): the accesses are
    /// checked in order, the first refused one is audited and the rest stay unchecked. False
    /// (Kafka): every access is checked and each refused one is audited; the front answers the
    /// refused parts and serves the others.
    bool all_or_nothing = false;

    /// Throttle: the byte-rate quota the request counts against (producer_byte_rate for a
    /// produce, consumer_byte_rate for a read), none for neither.
    std::optional<auth::quota_kind> byte_quota{};
    /// Bytes known before executing (a buffered produce body): recorded by decide() when the
    /// principal is not over its quota already. 0: decide() only checks; the front records
    /// what it used afterwards (record()).
    double bytes = 0;
    /// Whether the request's io-thread time counts against request_percentage (every request
    /// but the streams and the probes): checked now when a quota applies, and
    /// decision::meter_request_time then asks the front to measure it.
    bool request_time = false;
};

/// What decide() concluded. The verdict of each access is in the facts.
struct decision {
    /// The authenticate step: false when the front established no principal; then nothing
    /// else was decided (every access unchecked; authentication failures are audited where
    /// they happen: authentication_failed()).
    bool authenticated = true;
    /// Refused accesses (verdict::denied), and the first of them (null: none).
    std::size_t denied = 0;
    const access* first_denied = nullptr;
    /// Throttle: over a quota already, by this much (zero: not). The front answers it in its
    /// protocol (HTTP 429, SQS RequestThrottled, Kafka throttle_time_ms, a paced stream).
    /// Only decided for a request nothing refused.
    std::chrono::milliseconds delay{0};
    std::optional<auth::quota_kind> throttled_by{};
    /// A request_percentage quota applies: the front runs the handler on a metered executor
    /// and calls record_request_time() with its io-thread time.
    bool meter_request_time = false;

    /// Authenticated, nothing refused and not throttled: execute.
    bool allowed() const { return authenticated && denied == 0 && delay.count() <= 0; }
};

/// The chain. A small value (two pointers) copied into every front; what it points to
/// (run_server's authorizer and quota meter) outlives every front. Thread-safe as they are:
/// every member is const and may be called from any io thread.
class policy_chain {
public:
    /// Off: no authorizer, no quotas; everything is allowed and nothing throttled.
    policy_chain() = default;
    /// `authz` null or off: every access is allowed (one branch). `quotas` null: no quotas.
    policy_chain(const auth::authorizer* authz, quota_meter* quotas);

    /// The authorizer is on: only then does a front need to build accesses.
    bool authorizing() const { return authz_ != nullptr; }
    /// Client quotas are configured (there is at least one): only then does a front need to
    /// count bytes.
    bool metering() const;

    /// Authenticate, authorize, throttle, audit (see the file comment).
    decision decide(request_facts& facts) const;

    /// Authorize one access quietly (no audit, no log): a listing's filter, Kafka's authorized
    /// operations. True when the authorizer is off.
    bool visible(const requester& who, auth::acl_operation op, auth::resource_type type,
                 std::string_view name) const;
    /// Kafka's authorized-operations bit set (bit n: AclOperation n allowed) over `ops` for one
    /// resource; all of `ops` when the authorizer is off.
    std::int32_t authorized_operations(const requester& who, auth::resource_type type,
                                       std::string_view name,
                                       std::span<const auth::acl_operation> ops) const;
    /// Reports a refusal the front decided after decide() (a check that needed the backend's
    /// answer first): the audit line and the log line decide() writes for a denied access.
    void report_denied(const requester& who, std::string_view action, const access& a) const;
    /// The audit line of a failed authentication on any front (`user`: the name or access key
    /// id claimed, never a secret; `reason` for the operator).
    void authentication_failed(const requester& who, std::string_view mechanism,
                               std::string_view user, std::string_view reason) const;

    // The throttle step after execution (all zero / nullopt / false without quotas).

    /// Records `amount` of `kind` for the requester; the throttle time it earned.
    std::chrono::milliseconds record(const requester& who, auth::quota_kind kind,
                                     double amount) const;
    /// The throttle time the requester has for `kind` now, recording nothing.
    std::chrono::milliseconds throttled_now(const requester& who, auth::quota_kind kind) const;
    /// A quota of `kind` applies to the requester.
    bool quota_applies(const requester& who, auth::quota_kind kind) const;
    /// Records `busy` io-thread time against request_percentage; the throttle time it earned.
    std::chrono::milliseconds record_request_time(const requester& who,
                                                  std::chrono::nanoseconds busy) const;
    /// What the requester may still use of `kind` now; nullopt when no quota applies.
    std::optional<double> headroom(const requester& who, auth::quota_kind kind) const;

    /// The meter itself (run_server's metrics wiring, the quota admin APIs); may be null.
    quota_meter* meter() const { return quotas_; }

private:
    const auth::authorizer* authz_ = nullptr;  // null: off
    quota_meter* quotas_ = nullptr;            // null: no quotas
};

}  // namespace sluice::gateway
