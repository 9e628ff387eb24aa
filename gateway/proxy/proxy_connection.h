// One client connection of the Kafka proxy (upstream mode): the client's requests go to one
// upstream broker over a connection of this client's own, so correlation ids, ordering and
// idempotent-producer sessions stay the broker's.
//
//   client --read_loop--> frame --(header peeked)--> upstream socket      (forwarded as read)
//      ^                     |                           |
//      |                     +--> local answer           +--upstream_loop--> response
//      |                          (unsupported version)        (addresses rewritten where
//      +------ write_loop <--- slots in request order <---------   the API carries them)
//
// The upstream connection opens lazily at the first forwarded request: to broker N for the
// node port of N (with SNI routing: for the TLS server name the pattern gives N), to any live
// broker for the bootstrap port. Requests are framed and their
// header peeked; the bytes go on untouched. Responses are matched to requests in order (an
// upstream answers in order; Produce with acks=0 gets none) and their correlation ids checked.
// Bounds: socket.request.max.bytes per frame, queued.max.request.bytes and
// queued.max.requests over all connections (the same request_budget as the broker mode: a
// request's bytes are held from before its frame is allocated until its response is written),
// and max in-flight requests per connection.
//
// With proxy.sasl.passthrough a SASL listener's connection forwards SaslHandshake and
// SaslAuthenticate like any request, and its upstream connection does no login of the
// gateway's: the upstream broker authenticates the client. After a SaslHandshake v0 the
// upstream accepted, the bare tokens of its mechanism (PLAIN: one, SCRAM: two; no header, so
// no correlation id) go through as they are, each answered by the upstream's next frame;
// other mechanisms' v0 handshakes are refused here (their token count is not known).
//
// KIP-368: when the upstream's SaslAuthenticate gives the session a lifetime
// (connections.max.reauth.ms, a token's expiry), the upstream connection re-authenticates in
// place before it ends (reauth_loop): the next client request waits (later ones stay unread),
// the forwarded ones are answered, then SaslHandshake + SaslAuthenticate with the first login's
// credentials source (its token file read again), correlation ids of the proxy's own never
// written to the client; then forwarding resumes. The client sees a pause, not a cut.
//
// Failures: the upstream closes or fails -> this client's connection closes (as a broker that
// died); a malformed upstream response or a refused re-authentication -> one log line, this
// connection closes.
//
// Lifecycle: created by proxy_listener after accept; run() until either side hangs up, the
// connection idles past connections.max.idle.ms, stop() or cut().
// Concurrency: everything runs on the client socket's io_context (one thread); the upstream
// socket lives there too. stop() and cut() may be called from any thread (they post).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>

#include "auth/tls/tls_context.h"
#include "gateway/core/request_budget.h"
#include "gateway/proxy/client_login.h"
#include "gateway/proxy/principal_map.h"
#include "gateway/proxy/request_acls.h"
#include "gateway/proxy/response_rewrite.h"
#include "gateway/proxy/upstream_login.h"
#include "gateway/proxy/upstream_stream.h"
#include "gateway/proxy/upstream_topology.h"
#include "protocol/core/bytes.h"

namespace sluice::gateway::proxy {

/// What every proxy connection shares: the topology, the request budget and the limits.
struct proxy_services {
    upstream_topology& topology;
    request_budget& budget;
    std::int64_t max_request_bytes = 104857600;    // socket.request.max.bytes
    std::int32_t max_in_flight = 64;               // requests read ahead per connection
    std::chrono::milliseconds idle_timeout{600000};  // connections.max.idle.ms
    /// An upstream response larger than this is taken as malformed.
    std::int64_t max_response_bytes = std::int64_t{1} << 30;
    /// SASL termination on the SASL listeners (users, mechanisms, failure limiter).
    client_login_services login{};
    /// ACLs on forwarded requests (request_acls.h) when its authorizer is on.
    policy_chain chain{};
    /// proxy.principal.map: per client principal, the upstream login of its upstream
    /// connection instead of the topology's (the gateway's own); null for none.
    const principal_map_source* principals = nullptr;
    /// proxy.sasl.passthrough: on SASL listeners the client's login goes to the upstream
    /// broker (no client_login here, no login of the gateway's own on its upstream
    /// connection).
    bool sasl_passthrough = false;
};

class proxy_connection : public std::enable_shared_from_this<proxy_connection> {
public:
    /// `node`: the upstream node this port serves, or nullopt for the bootstrap port. `to`:
    /// where this listener serves each node (the rewritten addresses). `sasl`: the listener
    /// is SASL_PLAINTEXT or SASL_SSL: the client logs in here before anything is forwarded.
    /// `tls`: the context of an SSL or SASL_SSL listener (the handshake comes first; on SSL
    /// the client certificate's principal is the connection's), null for plaintext.
    proxy_connection(boost::asio::ip::tcp::socket socket, proxy_services& svc, std::uint64_t id,
                     std::optional<std::int32_t> node, node_addresses to, bool sasl = false,
                     std::shared_ptr<auth::tls_server_context> tls = nullptr);

    /// Serves the connection until it ends. Never throws.
    boost::asio::awaitable<void> run();
    /// Graceful (any thread): reads no more requests; forwarded ones are answered, then it
    /// closes.
    void stop();
    /// Terminal (any thread): closes both sockets now.
    void cut();

private:
    struct slot {
        std::int32_t correlation_id = 0;
        std::int16_t api_key = 0;
        std::int16_t version = 0;
        bool ready = false;
        std::shared_ptr<protocol::byte_buffer> raw;  // the upstream's frame, size included
        std::optional<protocol::writer> answer;     // or a frame made here
        bool close_after = false;                   // the connection closes once written
        response_merge merge;  // the denied part added to (or hidden from) the upstream's answer
        request_budget::reservation reserved;
        /// Quotas (only when the chain meters): a Fetch's quota client id; the answer waits
        /// until then (a client older than KIP-219 does not back off by itself).
        std::string client_id;
        std::chrono::steady_clock::time_point not_before{};
        /// SASL passthrough: a bare token after a SaslHandshake v0 (no header either way:
        /// its answer is the upstream's next frame, whatever it holds).
        bool bare_token = false;
        /// SASL passthrough: a SaslHandshake v0 whose mechanism exchanges this many bare
        /// client tokens once the upstream accepts it.
        int bare_rounds = 0;
        /// A request of the proxy's own (a KIP-368 re-authentication): its response goes to
        /// reauthenticate(), never to the client (the slot is in awaiting_ only).
        bool own = false;
    };

    boost::asio::awaitable<void> read_loop();
    boost::asio::awaitable<void> upstream_loop();
    boost::asio::awaitable<void> write_loop();
    boost::asio::awaitable<void> idle_watchdog();
    /// Opens the upstream connection (bounded by upstream.request.timeout.ms); false: closed.
    boost::asio::awaitable<bool> connect_upstream();
    /// KIP-368, while the upstream connection lives: at reauth_delay() after each login whose
    /// session ends, holds the client's requests (hold_forwarding_), waits until every
    /// forwarded request has its response, re-authenticates with upstream_login_ and lets the
    /// requests go on; a refused or failed re-authentication closes the connection.
    boost::asio::awaitable<void> reauth_loop(std::int64_t session_lifetime_ms);
    /// One re-authentication on the drained upstream connection, its frames matched through
    /// awaiting_ (slot::own), bounded by upstream.request.timeout.ms. False with `why`.
    boost::asio::awaitable<bool> reauthenticate(std::int64_t& session_lifetime_ms,
                                                std::string& why);
    /// The read loop's wait while a re-authentication holds the client's requests; false:
    /// the connection closed meanwhile.
    boost::asio::awaitable<bool> wait_reauthenticated();
    /// Turns an upstream response frame into the slot's answer; false: malformed (closed).
    bool take_response(slot& s, std::shared_ptr<protocol::byte_buffer> frame);
    /// Writes a client's request frame to the upstream as it came; false: the write failed and
    /// the connection is closed.
    boost::asio::awaitable<bool> forward_frame(const protocol::byte_buffer& frame);
    boost::asio::awaitable<bool> write_answer(const protocol::writer& w);
    /// On a SASL listener: answers the login's requests (and ApiVersions before it) here.
    /// True: `frame` was answered locally (a slot queued) or the connection ends (closed_ or
    /// reading_done_ set); false: it goes on upstream.
    boost::asio::awaitable<bool> answer_login(std::shared_ptr<protocol::byte_buffer> frame,
                                              request_budget::reservation& reserved);
    /// With the authorizer on: decides the request (request_acls.h). True: forward `frame`
    /// (replaced when the denied part was taken out); false: answered here or closed.
    bool authorize(slot& s, std::shared_ptr<protocol::byte_buffer>& frame);
    /// Queues a frame made here as the next answer in request order.
    void queue_local(std::int32_t correlation_id, protocol::writer answer, bool close_after,
                     request_budget::reservation reserved);
    /// The chain's view of the client (its login's principal, address, `client_id`).
    requester requester_of(std::string_view client_id) const;
    /// Quotas: a throttle time earned by slot `s` (request `version` of `api_key`): the
    /// connection reads nothing until it is over (KIP-219's muted channel) and, before
    /// `kip219_version`, the answer waits as long.
    void throttle(slot& s, std::chrono::milliseconds delay, std::int16_t kip219_version);
    /// Quotas on a Produce about to be forwarded (producer_byte_rate over its size).
    void meter_produce(slot& s, const protocol::byte_buffer& frame);
    /// Quotas on a Fetch answer (consumer_byte_rate over its size); `body_at`: where its body
    /// starts in the frame after the size prefix.
    void meter_fetch(slot& s, protocol::byte_buffer& frame, std::size_t body_at);
    /// TLS listeners: the handshake and, on SSL, the certificate's principal; false: closed.
    boost::asio::awaitable<bool> tls_handshake();
    /// SNI routing (proxy.sni.host.pattern), after the handshake: the server name picks the
    /// node (another name or none: the bootstrap); false: a node the cluster does not have
    /// (logged; the caller closes).
    bool route_by_server_name();
    /// Reads exactly `b` from the client (through TLS on TLS listeners).
    boost::asio::awaitable<void> read_client(boost::asio::mutable_buffer b,
                                             boost::system::error_code& ec);
    /// Writes every byte of `buffers` to the client (through TLS on TLS listeners).
    template <typename Buffers>
    boost::asio::awaitable<void> write_client(const Buffers& buffers,
                                              boost::system::error_code& ec);
    void close();
    void wake(boost::asio::steady_timer& t) { t.cancel(); }

    boost::asio::ip::tcp::socket client_;
    upstream_stream upstream_;  // TCP, or TLS over it (upstream.security.protocol)
    proxy_services& svc_;
    std::uint64_t id_;
    std::optional<std::int32_t> node_;
    node_addresses to_;
    std::string peer_;
    boost::asio::ip::tcp::endpoint peer_endpoint_;
    std::string authorizer_host_;  // the ACLs' host of the peer
    std::string upstream_name_;  // host:port, for log lines
    offered_apis offered_;
    std::optional<client_login> login_;  // SASL listeners only, unless passthrough_
    /// A SASL listener with proxy.sasl.passthrough: the login is forwarded like any request.
    bool passthrough_ = false;
    /// Passthrough: the bare client tokens still to come after an accepted SaslHandshake v0.
    int bare_tokens_left_ = 0;
    std::shared_ptr<auth::tls_server_context> tls_context_;
    /// TLS listeners: the stream over client_ (which keeps the socket for close and stop).
    std::unique_ptr<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;
    std::string tls_principal_;  // SSL listeners: the client certificate's ("User:...")
    bool reading_done_ = false;          // a local answer closes the connection after it
    std::deque<std::shared_ptr<slot>> pending_;   // every answered request, in request order
    std::deque<std::shared_ptr<slot>> awaiting_;  // forwarded, upstream response not read yet
    /// Correlation ids of the last Produce requests with acks=0 (no answer due; a mock
    /// cluster's answer to one is dropped).
    std::deque<std::int32_t> unanswered_;
    static constexpr std::size_t max_unanswered = 64;
    boost::asio::steady_timer writer_wakeup_;
    boost::asio::steady_timer reader_wakeup_;
    boost::asio::steady_timer idle_timer_;
    std::chrono::steady_clock::time_point last_activity_;
    std::chrono::steady_clock::time_point muted_until_{};  // a quota's throttle time
    bool upstream_open_ = false;
    /// The login of the upstream connection (the gateway's upstream.sasl.*, or the client
    /// principal's proxy.principal.map entry as it was at connect: a re-authentication never
    /// changes the upstream principal); null: none (no SASL upstream, passthrough).
    std::optional<upstream_login> upstream_login_;
    /// KIP-368: a re-authentication is due or under way; the read loop holds the next
    /// request (and so every later one: they stay unread) until it ends.
    bool hold_forwarding_ = false;
    /// A client frame is being written upstream (an acks=0 Produce has no slot to wait for).
    bool writing_upstream_ = false;
    /// The re-authentication's waits: the next one due, the drain, each response (woken by
    /// the upstream loop and the read loop while hold_forwarding_ is set, and by close()).
    boost::asio::steady_timer reauth_timer_;
    /// The upstream loop's wait after a re-authentication's answer, until it is taken.
    boost::asio::steady_timer upstream_wakeup_;
    bool closed_ = false;
    bool reader_done_ = false;
    bool stopping_ = false;
};

}  // namespace sluice::gateway::proxy
