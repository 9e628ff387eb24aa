#include "gateway/proxy/proxy_connection.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include "gateway/policy/tls_handshake.h"
#include "gateway/proxy/logger.h"
#include "gateway/proxy/upstream_login.h"
#include "gateway/proxy/upstream_stream.h"
#include "protocol/kafka/api_table.h"
#include "protocol/kafka/header.h"
#include "protocol/kafka/messages/produce.h"

namespace sluice::gateway::proxy {
namespace asio = boost::asio;
namespace kafka = protocol::kafka;
using asio::ip::tcp;

namespace {

constexpr std::int16_t conn_produce_key = static_cast<std::int16_t>(kafka::api_key::produce);
constexpr std::int16_t conn_metadata_key = static_cast<std::int16_t>(kafka::api_key::metadata);
constexpr std::int16_t conn_api_versions_key =
    static_cast<std::int16_t>(kafka::api_key::api_versions);
constexpr std::int16_t conn_fetch_key = static_cast<std::int16_t>(kafka::api_key::fetch);
constexpr std::int16_t conn_sasl_handshake_key =
    static_cast<std::int16_t>(kafka::api_key::sasl_handshake);
constexpr std::int16_t conn_sasl_authenticate_key =
    static_cast<std::int16_t>(kafka::api_key::sasl_authenticate);
/// The smallest request frame: api_key, api_version, correlation_id, client_id length.
constexpr std::int32_t conn_min_request_bytes = 10;
/// The first correlation id of a re-authentication's requests: negative, where clients (which
/// count theirs up from 0) are not, so that a late answer to a client's acks=0 Produce (a
/// mock cluster's) cannot be taken for the proxy's own.
constexpr std::int32_t conn_own_correlation_id = -1000000;

/// The re-authentications' jitter (each I/O thread its own).
std::minstd_rand& conn_random() {
    thread_local std::minstd_rand r{std::random_device{}()};
    return r;
}

/// SASL passthrough: the bare client tokens a SaslHandshake v0 for `mechanism` is followed by
/// once accepted (PLAIN: the one message; SCRAM: client-first and client-final, each answered;
/// a failed login ends with the upstream closing the connection); 0 for a mechanism whose
/// exchange length the proxy cannot know (GSSAPI, OAUTHBEARER's error round).
int conn_bare_rounds(std::string_view mechanism) {
    if (mechanism == "PLAIN") {
        return 1;
    }
    if (mechanism == "SCRAM-SHA-256" || mechanism == "SCRAM-SHA-512") {
        return 2;
    }
    return 0;
}

/// The mechanism a SaslHandshake request `frame` (size prefix included) names; empty when it
/// does not decode.
std::string conn_handshake_mechanism(const protocol::byte_buffer& frame) {
    protocol::reader r(frame.view().subspan(4));
    if (!kafka::decode_request_header(r)) {
        return {};
    }
    auto body = r.rest();
    if (body.size() < 2) {
        return {};
    }
    const auto n = protocol::load_i16(body.data());
    if (n < 0 || static_cast<std::size_t>(n) > body.size() - 2) {
        return {};
    }
    return std::string(reinterpret_cast<const char*>(body.data() + 2),
                       static_cast<std::size_t>(n));
}

bool conn_quiet_end(const boost::system::error_code& ec) {
    return ec == asio::error::eof || ec == asio::error::operation_aborted ||
           ec == asio::error::connection_reset || ec == asio::error::bad_descriptor;
}

/// Closes the upstream socket of `conn` when the connect deadline passes first.
asio::awaitable<void> conn_connect_deadline(std::shared_ptr<asio::steady_timer> t,
                                            tcp::socket* s,
                                            std::shared_ptr<void> /*keep*/) {
    boost::system::error_code ec;
    co_await t->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
        s->close(ec);
    }
}

/// The client_id of a request frame (size prefix included; every request header from v1 has
/// it at the same place), or empty.
std::string_view conn_client_id(const protocol::byte_buffer& frame) {
    if (frame.size() < 14) {
        return {};
    }
    const std::int16_t n = protocol::load_i16(frame.data() + 12);
    if (n <= 0 || static_cast<std::size_t>(n) > frame.size() - 14) {
        return {};
    }
    return {reinterpret_cast<const char*>(frame.data() + 14), static_cast<std::size_t>(n)};
}

}  // namespace

proxy_connection::proxy_connection(tcp::socket socket, proxy_services& svc, std::uint64_t id,
                                   std::optional<std::int32_t> node, node_addresses to, bool sasl,
                                   std::shared_ptr<auth::tls_server_context> tls)
    : client_(std::move(socket)),
      upstream_(client_.get_executor()),
      svc_(svc),
      id_(id),
      node_(node),
      to_(std::move(to)),
      writer_wakeup_(client_.get_executor()),
      reader_wakeup_(client_.get_executor()),
      idle_timer_(client_.get_executor()),
      last_activity_(std::chrono::steady_clock::now()),
      reauth_timer_(client_.get_executor()),
      upstream_wakeup_(client_.get_executor()) {
    boost::system::error_code ec;
    const auto peer = client_.remote_endpoint(ec);
    peer_ = ec ? std::string("?") : peer.address().to_string();
    peer_endpoint_ = peer;
    client_.set_option(tcp::no_delay(true), ec);
    if (tls) {
        tls_context_ = std::move(tls);
        tls_ = std::make_unique<asio::ssl::stream<tcp::socket&>>(client_, tls_context_->ssl);
    }
    if (svc_.chain.authorizing()) {
        authorizer_host_ = authorizer_host(peer);
        // APIs whose resources the proxy cannot name are not offered (never forwarded
        // unchecked).
        offered_.narrow_with(&authorized_versions);
    }
    if (sasl && svc_.sasl_passthrough) {
        // The upstream authenticates the client (run_server refuses the authorizer with it).
        passthrough_ = true;
    } else if (sasl) {
        login_.emplace(svc_.login, id_, peer);
        // Before the login ApiVersions is answered here: with what the upstream offered at the
        // last refresh (the codec's own list before the first).
        const auto upstream = svc_.topology.upstream_versions();
        if (!upstream.empty()) {
            offered_.set_from_upstream(upstream);
        }
    }
}

void proxy_connection::stop() {
    asio::post(client_.get_executor(), [self = shared_from_this()] {
        self->stopping_ = true;
        self->svc_.budget.cancel(self.get());
        if (!self->closed_) {
            boost::system::error_code ec;
            self->client_.shutdown(tcp::socket::shutdown_receive, ec);
            self->wake(self->reader_wakeup_);
        }
    });
}

void proxy_connection::cut() {
    asio::post(client_.get_executor(), [self = shared_from_this()] { self->close(); });
}

void proxy_connection::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    boost::system::error_code ec;
    client_.shutdown(tcp::socket::shutdown_both, ec);
    client_.close(ec);
    upstream_.close();
    pending_.clear();
    awaiting_.clear();
    svc_.budget.cancel(this);
    wake(writer_wakeup_);
    wake(reader_wakeup_);
    idle_timer_.cancel();
    reauth_timer_.cancel();
    upstream_wakeup_.cancel();
}

asio::awaitable<void> proxy_connection::run() {
    auto self = shared_from_this();
    proxy_log().debug("conn {}: accepted from {} for {}", id_, peer_,
                      node_ ? "node " + std::to_string(*node_) : std::string("bootstrap"));
    if (tls_ && (!co_await tls_handshake() || !route_by_server_name())) {
        close();
        co_return;
    }
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(ex, idle_watchdog(), asio::detached);
    asio::co_spawn(ex, write_loop(), asio::detached);
    try {
        co_await read_loop();
    } catch (const std::exception& e) {
        proxy_log().error("conn {}: read loop failed: {}", id_, e.what());
        close();
    }
    reader_done_ = true;
    wake(writer_wakeup_);
}

asio::awaitable<void> proxy_connection::read_loop() {
    const auto max_in_flight = static_cast<std::size_t>(std::max(1, svc_.max_in_flight));
    std::byte prefix[4];
    while (!closed_ && !stopping_) {
        boost::system::error_code ec;
        // A quota throttled an earlier request: read nothing until the throttle time is over
        // (KIP-219's muted channel), as the broker mode does; each response written wakes
        // the wait, which then goes on.
        // (No clock read unless a quota throttled this connection.)
        if (muted_until_ != std::chrono::steady_clock::time_point{}) {
            while (!closed_ && !stopping_ && std::chrono::steady_clock::now() < muted_until_) {
                reader_wakeup_.expires_at(muted_until_);
                co_await reader_wakeup_.async_wait(
                    asio::redirect_error(asio::use_awaitable, ec));
            }
            muted_until_ = {};
            if (closed_ || stopping_) {
                co_return;
            }
        }
        co_await read_client(asio::buffer(prefix, 4), ec);
        if (ec) {
            if (!conn_quiet_end(ec)) {
                proxy_log().debug("conn {}: read failed: {}", id_, ec.message());
                close();
            }
            co_return;  // a clean end: the write loop sends what is pending, then closes
        }
        last_activity_ = std::chrono::steady_clock::now();
        const std::int32_t size = protocol::load_i32(prefix);
        // A bare SASL token (after SaslHandshake v0) has no request header.
        const bool bare = bare_tokens_left_ > 0;
        const std::int32_t min_size =
            (login_ && login_->expects_raw_token()) || bare ? 0 : conn_min_request_bytes;
        if (size < min_size || size > svc_.max_request_bytes) {
            proxy_log().warn("conn {} from {}: frame size {} outside [{}, {}] "
                             "(socket.request.max.bytes); closing",
                             id_, peer_, size, min_size, svc_.max_request_bytes);
            close();
            co_return;
        }
        // queued.max.request.bytes / queued.max.requests, reserved before the frame is
        // allocated; held until the response is written.
        request_budget::reservation reserved = co_await svc_.budget.acquire(size, this);
        if (!reserved || closed_ || stopping_) {
            co_return;
        }
        // The frame keeps its size prefix so that it goes upstream in one write.
        auto frame = std::make_shared<protocol::byte_buffer>(static_cast<std::size_t>(size) + 4);
        frame->resize(static_cast<std::size_t>(size) + 4);
        std::memcpy(frame->data(), prefix, 4);
        co_await read_client(asio::buffer(frame->data() + 4, frame->size() - 4), ec);
        if (ec) {
            proxy_log().debug("conn {}: connection ended inside a {}-byte frame: {}", id_, size,
                              ec.message());
            close();
            co_return;
        }
        last_activity_ = std::chrono::steady_clock::now();
        if (login_ && co_await answer_login(frame, reserved)) {
            if (closed_ || reading_done_) {
                co_return;
            }
            continue;
        }
        auto s = std::make_shared<slot>();
        s->reserved = std::move(reserved);
        if (bare) {
            // SASL passthrough after SaslHandshake v0: the token goes as it came, and the
            // upstream's next frame is its answer.
            --bare_tokens_left_;
            s->bare_token = true;
            pending_.push_back(s);
            awaiting_.push_back(s);
            if (!co_await forward_frame(*frame)) {
                co_return;
            }
            continue;  // (pending_ holds at most the one slot: no backpressure to wait for)
        }
        s->api_key = protocol::load_i16(frame->data() + 4);
        s->version = protocol::load_i16(frame->data() + 6);
        s->correlation_id = protocol::load_i32(frame->data() + 8);
        if (passthrough_ && s->api_key == conn_sasl_handshake_key && s->version == 0) {
            s->bare_rounds = conn_bare_rounds(conn_handshake_mechanism(*frame));
        }
        if (!offered_.offers(s->api_key, s->version)) {
            // An API key the proxy does not know, or a version it does not offer (a too-new
            // ApiVersions included): answered here as a broker answers an unsupported version;
            // the session goes on.
            const kafka::api_info* info = kafka::find_api(s->api_key);
            proxy_log().debug("conn {}: {} v{} not offered; answering UNSUPPORTED_VERSION", id_,
                              info ? info->name : "API key " + std::to_string(s->api_key),
                              s->version);
            s->answer = unsupported_version_answer(s->correlation_id, offered_);
            s->ready = true;
            pending_.push_back(std::move(s));
            wake(writer_wakeup_);
        } else if (passthrough_ && s->api_key == conn_sasl_handshake_key && s->version == 0 &&
                   s->bare_rounds == 0) {
            // SASL passthrough: after a SaslHandshake v0 the tokens come bare, without a
            // request header; the proxy passes them for the mechanisms whose number of
            // tokens it knows (PLAIN, SCRAM), and refuses the others' v0 handshake.
            // compat: v0 stays advertised, since librdkafka's SASL feature check
            // (rdkafka_feature.c) wants SaslHandshake v0 in the range even though it then
            // sends v1 and SaslAuthenticate (KIP-152).
            proxy_log().info("conn {} from {}: SaslHandshake v0 for '{}' cannot pass through "
                             "(bare tokens pass for PLAIN and SCRAM only; v1 passes for every "
                             "mechanism); answering UNSUPPORTED_VERSION",
                             id_, peer_, conn_handshake_mechanism(*frame).substr(0, 64));
            s->answer = sasl_handshake_v0_refusal(s->correlation_id);
            s->ready = true;
            pending_.push_back(std::move(s));
            wake(writer_wakeup_);
        } else if (svc_.chain.authorizing() && !authorize(*s, frame)) {
            if (closed_) {
                co_return;
            }
        } else {
            bool expects_response = true;
            if (s->api_key == conn_produce_key) {
                protocol::reader r(frame->view().subspan(4));
                if (kafka::decode_request_header(r)) {
                    expects_response = produce_expects_response(s->version, r.rest());
                }
            }
            if (svc_.chain.metering()) {
                if (s->api_key == conn_produce_key) {
                    meter_produce(*s, *frame);
                } else if (s->api_key == conn_fetch_key) {
                    s->client_id = conn_client_id(*frame);
                }
            }
            // KIP-368: a re-authentication holds this request and every later one (unread).
            if (hold_forwarding_ && !co_await wait_reauthenticated()) {
                co_return;
            }
            if (!upstream_open_ && !co_await connect_upstream()) {
                co_return;
            }
            if (closed_) {
                co_return;
            }
            if (expects_response) {
                pending_.push_back(s);
                awaiting_.push_back(s);
            } else {
                unanswered_.push_back(s->correlation_id);
                if (unanswered_.size() > max_unanswered) {
                    unanswered_.pop_front();
                }
            }
            if (!co_await forward_frame(*frame)) {
                co_return;
            }
        }
        // Backpressure: stop reading while too many requests wait for their responses.
        while (!closed_ && pending_.size() >= max_in_flight) {
            reader_wakeup_.expires_at(asio::steady_timer::time_point::max());
            co_await reader_wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
    }
}

asio::awaitable<bool> proxy_connection::connect_upstream() {
    std::optional<upstream_address> at;
    if (node_) {
        at = svc_.topology.address_of(*node_);
        if (!at) {
            proxy_log().info("conn {}: upstream broker {} is not in the cluster; closing", id_,
                             *node_);
            close();
            co_return false;
        }
    } else {
        at = svc_.topology.pick();
    }
    upstream_name_ = at->host + ":" + std::to_string(at->port);
    // proxy.principal.map: this client's principal (its login is done: nothing is forwarded
    // before it, and a re-authentication cannot change it) picks the upstream credentials.
    const upstream_login* login = &svc_.topology.login();
    // The map in use now (a SIGHUP may replace it), held while this login is made.
    const std::shared_ptr<const principal_map> principals =
        svc_.principals != nullptr ? svc_.principals->current() : nullptr;
    if (principals != nullptr) {
        const requester who = requester_of({});
        if (const upstream_login* mapped = principals->find(who.principal)) {
            login = mapped;
            proxy_log().debug("conn {}: {} logs in upstream {} (proxy.principal.map)", id_,
                              who.principal,
                              mapped->tls ? std::string("with its mapped certificate")
                              : !mapped->token_file.empty()
                                  ? "with the token in " + mapped->token_file
                                  : "as " + mapped->username);
        } else if (principals->deny_unmapped()) {
            proxy_log().warn("conn {} from {}: {} has no entry in proxy.principal.map "
                             "(proxy.principal.map.unmapped=deny); closing",
                             id_, peer_, who.principal);
            close();
            co_return false;
        }
    }
    auto ex = co_await asio::this_coro::executor;
    auto deadline = std::make_shared<asio::steady_timer>(ex, svc_.topology.request_timeout());
    asio::co_spawn(ex, conn_connect_deadline(deadline, &upstream_.socket(), shared_from_this()),
                   asio::detached);
    // TCP, then TLS with upstream.security.protocol SSL / SASL_SSL (a failed certificate
    // check is one line here, and the client sees its connection close as a dead broker's).
    std::string why;
    // A CERTIFICATE entry of the map: this client's own client certificate (SSL upstream).
    const bool opened = co_await upstream_.open(
        at->host, at->port, login->tls ? login->tls : svc_.topology.tls(), why);
    if (!opened) {
        deadline->cancel();
        if (!closed_) {
            proxy_log().info("conn {}: upstream {}; closing the client", id_, why);
            close();
        }
        co_return false;
    }
    // The login (the client principal's mapped credentials, else the gateway's own
    // upstream.sasl.*) before the first forwarded request, within the same deadline.
    std::int64_t session_lifetime_ms = 0;
    if (!closed_ && login->enabled() && !passthrough_) {
        // Kept for the re-authentications: the same credentials source, whatever a SIGHUP
        // makes of the map meanwhile.
        upstream_login_ = *login;
        if (!co_await log_in_upstream(upstream_, *upstream_login_, why, &session_lifetime_ms)) {
            deadline->cancel();
            if (!closed_) {
                proxy_log().warn("conn {}: login to upstream {} failed: {}; closing", id_,
                                 upstream_name_, why);
                close();
            }
            co_return false;
        }
    }
    deadline->cancel();
    if (closed_) {
        co_return false;
    }
    if (!upstream_.is_open()) {
        proxy_log().info("conn {}: upstream {} unreachable: timed out; closing", id_,
                         upstream_name_);
        close();
        co_return false;
    }
    upstream_open_ = true;
    asio::co_spawn(ex, upstream_loop(), asio::detached);
    if (session_lifetime_ms > 0) {
        proxy_log().debug("conn {}: upstream {} session lasts {} ms; re-authenticating before "
                          "it ends",
                          id_, upstream_name_, session_lifetime_ms);
        asio::co_spawn(ex, reauth_loop(session_lifetime_ms), asio::detached);
    }
    co_return true;
}

asio::awaitable<void> proxy_connection::reauth_loop(std::int64_t session_lifetime_ms) {
    auto self = shared_from_this();
    std::uniform_real_distribution<double> jitter(0.0, 1.0);
    while (!closed_ && session_lifetime_ms > 0) {
        boost::system::error_code ec;
        const auto due = std::chrono::steady_clock::now() +
                         reauth_delay(session_lifetime_ms, svc_.topology.request_timeout(),
                                      jitter(conn_random()));
        while (!closed_ && std::chrono::steady_clock::now() < due) {
            reauth_timer_.expires_at(due);
            co_await reauth_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        // KIP-368: no request in flight during a re-authentication. The next client request
        // waits in the read loop; the forwarded ones are answered first.
        hold_forwarding_ = true;
        while (!closed_ && (!awaiting_.empty() || writing_upstream_)) {
            reauth_timer_.expires_at(asio::steady_timer::time_point::max());
            co_await reauth_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        if (closed_) {
            co_return;
        }
        std::string why;
        const std::int64_t was = session_lifetime_ms;
        if (!co_await reauthenticate(session_lifetime_ms, why)) {
            if (!closed_) {
                // As after a broker failure: the client reconnects (and logs in anew).
                proxy_log().warn("conn {} from {}: re-authentication to upstream {} failed: {}; "
                                 "closing",
                                 id_, peer_, upstream_name_, why);
                close();
            }
            co_return;
        }
        proxy_log().debug("conn {}: re-authenticated to upstream {} (session of {} ms; next {} ms)",
                          id_, upstream_name_, was, session_lifetime_ms);
        hold_forwarding_ = false;
        wake(reader_wakeup_);
        wake(upstream_wakeup_);
    }
}

asio::awaitable<bool> proxy_connection::reauthenticate(std::int64_t& session_lifetime_ms,
                                                       std::string& why) {
    const auto timeout = svc_.topology.request_timeout();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    upstream_sasl_exchange exchange(*upstream_login_, conn_own_correlation_id);
    auto next = exchange.start();
    while (next.what == upstream_sasl_exchange::state::sending) {
        // Matched like a forwarded request (the upstream answers in order; nothing else is in
        // flight), but never queued for the client.
        auto s = std::make_shared<slot>();
        s->own = true;
        s->correlation_id = exchange.correlation_id();
        awaiting_.push_back(s);
        wake(upstream_wakeup_);
        boost::system::error_code ec;
        const auto& request = next.request.buffer();
        co_await upstream_.write(asio::buffer(request.data(), request.size()), ec);
        if (ec) {
            why = ec.message();
            co_return false;
        }
        while (!closed_ && !s->ready && std::chrono::steady_clock::now() < deadline) {
            reauth_timer_.expires_at(deadline);
            co_await reauth_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        if (closed_) {
            why = "the connection closed";
            co_return false;
        }
        if (!s->ready) {
            why = fmt::format("no answer within {} ms (upstream.request.timeout.ms)",
                              timeout.count());
            co_return false;
        }
        next = exchange.on_response(s->raw->view().subspan(4));
    }
    if (next.what == upstream_sasl_exchange::state::failed) {
        why = exchange.why();
        co_return false;
    }
    session_lifetime_ms = exchange.session_lifetime_ms();
    co_return true;
}

asio::awaitable<bool> proxy_connection::wait_reauthenticated() {
    while (!closed_ && hold_forwarding_) {
        boost::system::error_code ec;
        reader_wakeup_.expires_at(asio::steady_timer::time_point::max());
        co_await reader_wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return !closed_;
}

asio::awaitable<void> proxy_connection::upstream_loop() {
    auto self = shared_from_this();
    std::byte prefix[4];
    while (!closed_) {
        boost::system::error_code ec;
        co_await upstream_.read(asio::buffer(prefix, 4), ec);
        if (ec) {
            if (!closed_) {
                // compat: an upstream broker that went away looks to the client like a broker
                // that died: its connection closes, and it asks for metadata again.
                proxy_log().info("conn {}: upstream {} closed: {}; closing the client", id_,
                                 upstream_name_, ec.message());
                close();
            }
            co_return;
        }
        const std::int32_t size = protocol::load_i32(prefix);
        // A bare SASL token's answer (passthrough after SaslHandshake v0) has no header.
        const bool bare = !awaiting_.empty() && awaiting_.front()->bare_token;
        if (size < (bare ? 0 : 4) || size > svc_.max_response_bytes) {
            proxy_log().warn("conn {}: malformed upstream response from {} (frame size {}); "
                             "closing",
                             id_, upstream_name_, size);
            close();
            co_return;
        }
        auto frame = std::make_shared<protocol::byte_buffer>(static_cast<std::size_t>(size) + 4);
        frame->resize(static_cast<std::size_t>(size) + 4);
        std::memcpy(frame->data(), prefix, 4);
        co_await upstream_.read(asio::buffer(frame->data() + 4, frame->size() - 4), ec);
        if (ec || closed_) {
            if (!closed_) {
                proxy_log().info("conn {}: upstream {} closed inside a response: {}; closing",
                                 id_, upstream_name_, ec.message());
                close();
            }
            co_return;
        }
        if (bare) {
            auto s = awaiting_.front();
            awaiting_.pop_front();
            s->raw = std::move(frame);
            s->ready = true;
            wake(writer_wakeup_);
            continue;
        }
        const std::int32_t correlation_id = protocol::load_i32(frame->data() + 4);
        if (awaiting_.empty() || awaiting_.front()->correlation_id != correlation_id) {
            // compat: librdkafka's mock cluster answers Produce with acks=0, which Kafka
            // brokers never do; a client straight on it drops the answer, and so does the
            // proxy.
            const auto acks0 =
                std::find(unanswered_.begin(), unanswered_.end(), correlation_id);
            if (acks0 != unanswered_.end()) {
                unanswered_.erase(acks0);
                continue;
            }
            proxy_log().warn("conn {}: malformed upstream response from {}: correlation id {} "
                             "where {} was due; closing",
                             id_, upstream_name_, correlation_id,
                             awaiting_.empty() ? std::string("none")
                                               : std::to_string(awaiting_.front()->correlation_id));
            close();
            co_return;
        }
        auto s = awaiting_.front();
        awaiting_.pop_front();
        if (hold_forwarding_) {
            // A re-authentication: its own response, or one more forwarded request drained.
            wake(reauth_timer_);
            if (s->own) {
                s->raw = std::move(frame);
                s->ready = true;
                // Nothing more is read until the re-authentication took this answer and sent
                // its next request or ended: a refusal comes with the upstream closing, and
                // the refusal is what the log line must say.
                while (!closed_ && hold_forwarding_ && awaiting_.empty()) {
                    upstream_wakeup_.expires_at(asio::steady_timer::time_point::max());
                    co_await upstream_wakeup_.async_wait(
                        asio::redirect_error(asio::use_awaitable, ec));
                }
                continue;
            }
        }
        if (s->bare_rounds > 0 && frame->size() >= 10 &&
            protocol::load_i16(frame->data() + 8) == 0) {
            // The upstream accepted a passthrough SaslHandshake v0: its mechanism's bare
            // tokens follow (the client sends them only after reading this answer).
            bare_tokens_left_ = s->bare_rounds;
        }
        if (!take_response(*s, std::move(frame))) {
            close();
            co_return;
        }
        s->ready = true;
        wake(writer_wakeup_);
    }
}

requester proxy_connection::requester_of(std::string_view client_id) const {
    requester who;
    who.front = policy_front::kafka;
    who.principal = login_                   ? std::string_view(login_->principal())
                    : !tls_principal_.empty() ? std::string_view(tls_principal_)
                                              : std::string_view("User:ANONYMOUS");
    who.mechanism = login_ ? std::string_view(login_->mechanism()) : std::string_view();
    who.peer = peer_endpoint_;
    who.host = authorizer_host_;
    who.client_id = client_id;
    return who;
}

asio::awaitable<bool> proxy_connection::tls_handshake() {
    const std::string who = fmt::format("conn {} from {}", id_, peer_);
    const audit_source source{"User:ANONYMOUS", audit_client_of(peer_endpoint_), "kafka"};
    if (!co_await bounded_tls_handshake(*tls_, client_, shared_from_this(), proxy_log(), who,
                                        source)) {
        co_return false;
    }
    if (login_ || passthrough_) {
        co_return true;  // SASL_SSL: the principal comes from the SASL login (or the upstream's)
    }
    // SSL: the client certificate's principal (none: User:ANONYMOUS, as Kafka has it).
    auto principal = tls_client_principal(*tls_context_, tls_->native_handle(), who, source);
    if (!principal) {
        co_return false;
    }
    tls_principal_ = std::move(*principal);
    co_return true;
}

bool proxy_connection::route_by_server_name() {
    if (!to_.sni) {
        return true;
    }
    const char* sent = SSL_get_servername(tls_->native_handle(), TLSEXT_NAMETYPE_host_name);
    const std::string_view name = sent != nullptr ? std::string_view(sent) : std::string_view();
    const auto node = to_.sni->route(name, to_.host);
    if (!node) {
        proxy_log().debug("conn {} from {}: TLS server name '{}': bootstrap", id_, peer_, name);
        return true;
    }
    if (!svc_.topology.address_of(*node)) {
        // As a broker that is gone: the client's connection closes, its metadata moves on.
        proxy_log().warn("conn {} from {}: TLS server name '{}' names upstream broker {}, which "
                         "the cluster does not have (proxy.sni.host.pattern {}); closing",
                         id_, peer_, name, *node, to_.sni->text());
        return false;
    }
    node_ = node;
    proxy_log().debug("conn {} from {}: TLS server name '{}': upstream broker {}", id_, peer_,
                      name, *node);
    return true;
}

asio::awaitable<void> proxy_connection::read_client(asio::mutable_buffer b,
                                                    boost::system::error_code& ec) {
    if (!tls_) {
        co_await asio::async_read(client_, b, asio::redirect_error(asio::use_awaitable, ec));
        co_return;
    }
    // compat: as the broker mode (gateway/kafka/connection.cc): librdkafka writes a request
    // as several TLS records; TCP_QUICKACK after each one read keeps delayed ACKs from
    // holding the next back ~40 ms under Nagle.
    const int one = 1;
    while (b.size() > 0) {
        const std::size_t n =
            co_await tls_->async_read_some(b, asio::redirect_error(asio::use_awaitable, ec));
        ::setsockopt(client_.native_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
        if (ec) {
            co_return;
        }
        b += n;
    }
}

template <typename Buffers>
asio::awaitable<void> proxy_connection::write_client(const Buffers& buffers,
                                                     boost::system::error_code& ec) {
    if (tls_) {
        co_await asio::async_write(*tls_, buffers, asio::redirect_error(asio::use_awaitable, ec));
    } else {
        co_await asio::async_write(client_, buffers,
                                   asio::redirect_error(asio::use_awaitable, ec));
    }
}

void proxy_connection::throttle(slot& s, std::chrono::milliseconds delay,
                                std::int16_t kip219_version) {
    if (delay.count() <= 0) {
        return;
    }
    const auto until = std::chrono::steady_clock::now() + delay;
    muted_until_ = std::max(muted_until_, until);
    if (s.version < kip219_version) {
        s.not_before = until;
    }
}

void proxy_connection::meter_produce(slot& s, const protocol::byte_buffer& frame) {
    // Kafka counts a Produce request's size against producer_byte_rate.
    const auto delay =
        svc_.chain.record(requester_of(conn_client_id(frame)),
                          auth::quota_kind::producer_byte_rate, static_cast<double>(frame.size()));
    if (delay.count() <= 0) {
        return;
    }
    throttle(s, delay, 6);
    if (s.version < 1) {
        return;  // no throttle_time_ms before v1
    }
    // throttle_time_ms in the answer, after the ACLs' merge when there is one.
    const auto ms = static_cast<std::int32_t>(delay.count());
    s.merge = [inner = std::move(s.merge), version = s.version, ms](
                  protocol::bytes_view body,
                  std::shared_ptr<const void> owner) -> result<protocol::byte_buffer> {
        protocol::byte_buffer merged;
        if (inner) {
            auto r = inner(body, std::move(owner));
            if (!r) {
                return r;
            }
            merged = std::move(*r);
            body = merged.view();
        }
        protocol::reader rd(body);
        kafka::produce_response resp;
        resp.decode(rd, version);
        if (!rd.ok()) {
            return std::unexpected(rd.error());
        }
        resp.throttle_time_ms = std::max(resp.throttle_time_ms, ms);
        protocol::writer w;
        resp.encode(w, version);
        return w.flatten();
    };
}

void proxy_connection::meter_fetch(slot& s, protocol::byte_buffer& frame, std::size_t body_at) {
    // Kafka counts a Fetch response's size against consumer_byte_rate.
    const auto delay =
        svc_.chain.record(requester_of(s.client_id), auth::quota_kind::consumer_byte_rate,
                          static_cast<double>(frame.size()));
    if (delay.count() <= 0) {
        return;
    }
    throttle(s, delay, 8);
    // throttle_time_ms leads the body from v1: set in place (the upstream's own, if larger,
    // stays).
    std::byte* at = frame.data() + 4 + body_at;
    if (s.version >= 1 && frame.size() >= 4 + body_at + 4) {
        const auto ms = static_cast<std::int32_t>(delay.count());
        protocol::store_i32(at, std::max(protocol::load_i32(at), ms));
    }
}

bool proxy_connection::authorize(slot& s, std::shared_ptr<protocol::byte_buffer>& frame) {
    const requester who = requester_of({});
    auto decided = check_request(svc_.chain, who, frame->view().subspan(4), frame);
    if (!decided) {
        const kafka::api_info* info = kafka::find_api(s.api_key);
        proxy_log().warn("conn {} from {}: undecodable {} v{} request: {}; closing", id_, peer_,
                         info ? std::string(info->name) : std::to_string(s.api_key), s.version,
                         decided.error().message());
        close();
        return false;
    }
    switch (decided->what) {
        case acl_decision::action::forward:
            s.merge = std::move(decided->merge);
            return true;
        case acl_decision::action::forward_filtered:
            frame = std::make_shared<protocol::byte_buffer>(decided->frame.flatten());
            s.merge = std::move(decided->merge);
            return true;
        case acl_decision::action::answer:
            queue_local(s.correlation_id, std::move(decided->frame), false,
                        std::move(s.reserved));
            return false;
        case acl_decision::action::close:
            // compat: a broker closes the connection of a refused Produce with acks=0 (no
            // answer is due, and the client must learn it failed).
            proxy_log().info("conn {} from {}: Produce with acks=0 refused by the ACLs; closing",
                             id_, peer_);
            close();
            return false;
    }
    return true;
}

void proxy_connection::queue_local(std::int32_t correlation_id, protocol::writer answer,
                                   bool close_after, request_budget::reservation reserved) {
    auto s = std::make_shared<slot>();
    s->correlation_id = correlation_id;
    s->answer = std::move(answer);
    s->close_after = close_after;
    s->reserved = std::move(reserved);
    s->ready = true;
    pending_.push_back(std::move(s));
    wake(writer_wakeup_);
}

asio::awaitable<bool> proxy_connection::answer_login(std::shared_ptr<protocol::byte_buffer> frame,
                                                     request_budget::reservation& reserved) {
    if (login_->expects_raw_token()) {
        auto answer = co_await login_->raw_token(frame->view().subspan(4));
        if (!closed_ && !answer) {
            // compat: after a SaslHandshake v0 a failed login closes the connection unanswered
            // (Kafka's SaslServerAuthenticator).
            close();
        }
        if (!closed_) {
            queue_local(-1, std::move(answer->frame), false, std::move(reserved));
        }
        co_return true;
    }
    const std::int16_t key = protocol::load_i16(frame->data() + 4);
    if (login_->authenticated() && key != conn_sasl_handshake_key &&
        key != conn_sasl_authenticate_key) {
        co_return false;
    }
    protocol::reader r(frame->view().subspan(4));
    const auto header = kafka::decode_request_header(r);
    if (!header) {
        proxy_log().warn("conn {} from {}: undecodable request header: {}; closing", id_, peer_,
                         header.error().message());
        close();
        co_return true;
    }
    const std::int16_t version = header->api_version;
    if (key == conn_sasl_handshake_key || key == conn_sasl_authenticate_key) {
        const kafka::api_info* info = kafka::find_api(key);
        if (version < info->min_version || version > info->max_version) {
            queue_local(header->correlation_id,
                        unsupported_version_answer(header->correlation_id, offered_), false,
                        std::move(reserved));
            co_return true;
        }
        login_answer a;
        if (key == conn_sasl_handshake_key) {
            a = login_->handshake(*header, r.rest());
        } else {
            a = co_await login_->authenticate(*header, r.rest());
        }
        if (closed_) {
            co_return true;
        }
        queue_local(header->correlation_id, std::move(a.frame), a.close_after,
                    std::move(reserved));
        reading_done_ = a.close_after;
        co_return true;
    }
    if (key == conn_api_versions_key) {
        // Before the login: answered here (nothing goes upstream yet).
        queue_local(header->correlation_id,
                    api_versions_answer(header->correlation_id, version, offered_), false,
                    std::move(reserved));
        co_return true;
    }
    // compat: Kafka's SaslServerAuthenticator closes a connection that sends any other request
    // before its SASL login completed, or after its session ended (KIP-368).
    const kafka::api_info* info = kafka::find_api(key);
    proxy_log().warn("conn {} from {} client '{}': {} {}; closing", id_, peer_,
                     header->client_id.value_or(""),
                     info ? std::string(info->name) : "API key " + std::to_string(key),
                     login_->principal().empty()
                         ? std::string("before SASL authentication")
                         : "after the SASL session of " + login_->principal() + " expired");
    close();
    co_return true;
}

bool proxy_connection::take_response(slot& s, std::shared_ptr<protocol::byte_buffer> frame) {
    const kafka::api_info* info = kafka::find_api(s.api_key);
    if (s.api_key == conn_fetch_key && svc_.chain.metering()) {
        const auto at = response_body_offset(frame->view().subspan(4),
                                             info->response_header_version(s.version));
        if (at) {
            meter_fetch(s, *frame, *at);
        }
    }
    if (s.merge) {
        // The ACLs' part: denied entries added to (or hidden entries taken out of) the body.
        const auto upstream = frame->view().subspan(4);
        const auto at = response_body_offset(upstream, info->response_header_version(s.version));
        auto merged = at ? s.merge(upstream.subspan(*at), frame)
                         : result<protocol::byte_buffer>(std::unexpected(at.error()));
        if (!merged) {
            proxy_log().warn("conn {}: malformed upstream {} v{} response from {}: {}; closing",
                             id_, info->name, s.version, upstream_name_,
                             merged.error().message());
            return false;
        }
        auto next = std::make_shared<protocol::byte_buffer>(4 + *at + merged->size());
        next->resize(4 + *at + merged->size());
        protocol::store_i32(next->data(), static_cast<std::int32_t>(*at + merged->size()));
        std::memcpy(next->data() + 4, upstream.data(), *at);
        std::memcpy(next->data() + 4 + *at, merged->data(), merged->size());
        frame = std::move(next);
        s.merge = nullptr;
    }
    const auto response = frame->view().subspan(4);
    if (!rewrites_response(s.api_key, s.version)) {
        s.raw = std::move(frame);
        return true;
    }
    const auto body_at = response_body_offset(response, info->response_header_version(s.version));
    protocol::writer out;
    result<bool> rewritten = std::unexpected(make_error_code(protocol::errc::truncated));
    std::vector<upstream_broker> seen;
    if (body_at) {
        const std::size_t size_at = out.reserve_i32();
        out.raw(response.first(*body_at));
        const auto body = response.subspan(*body_at);
        if (s.api_key == conn_api_versions_key) {
            rewritten = rewrite_api_versions(s.version, body, frame, offered_, out);
        } else {
            rewritten = rewrite_response_body(s.api_key, s.version, body, frame, to_, &seen, out);
        }
        out.patch_i32(size_at, static_cast<std::int32_t>(out.size() - 4));
    }
    if (!rewritten) {
        proxy_log().warn("conn {}: malformed upstream {} v{} response from {}: {}; closing", id_,
                         info->name, s.version, upstream_name_, rewritten.error().message());
        return false;
    }
    if (s.api_key == conn_metadata_key && !seen.empty()) {
        svc_.topology.observe(seen);
    }
    if (*rewritten) {
        s.answer = std::move(out);
    } else {
        s.raw = std::move(frame);
    }
    return true;
}

asio::awaitable<void> proxy_connection::write_loop() {
    auto self = shared_from_this();
    while (true) {
        while (!closed_ && !pending_.empty() && pending_.front()->ready) {
            auto s = pending_.front();
            if (s->not_before != std::chrono::steady_clock::time_point{} &&
                s->not_before > std::chrono::steady_clock::now()) {
                // compat: a client older than KIP-219 does not back off by itself, so its
                // throttled answer waits out the throttle time (what follows it waits too).
                asio::steady_timer delay(client_.get_executor(), s->not_before);
                boost::system::error_code ec;
                co_await delay.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                if (closed_) {
                    break;
                }
            }
            pending_.pop_front();
            wake(reader_wakeup_);
            bool ok = true;
            if (s->raw) {
                boost::system::error_code ec;
                co_await write_client(asio::buffer(s->raw->data(), s->raw->size()), ec);
                ok = !ec;
            } else if (s->answer) {
                ok = co_await write_answer(*s->answer);
            }
            if (!ok || s->close_after) {
                close();
            }
            last_activity_ = std::chrono::steady_clock::now();
        }
        if (closed_ || (reader_done_ && pending_.empty())) {
            break;
        }
        boost::system::error_code ec;
        writer_wakeup_.expires_at(asio::steady_timer::time_point::max());
        co_await writer_wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    close();
}

asio::awaitable<bool> proxy_connection::forward_frame(const protocol::byte_buffer& frame) {
    boost::system::error_code ec;
    writing_upstream_ = true;
    co_await upstream_.write(asio::buffer(frame.data(), frame.size()), ec);
    writing_upstream_ = false;
    if (hold_forwarding_) {
        wake(reauth_timer_);  // an acks=0 Produce: no response to drain, its write was all
    }
    if (ec) {
        if (!closed_) {
            proxy_log().info("conn {}: upstream {} failed: {}; closing", id_, upstream_name_,
                             ec.message());
            close();
        }
        co_return false;
    }
    co_return true;
}

asio::awaitable<bool> proxy_connection::write_answer(const protocol::writer& w) {
    // Record bytes of a rewritten Produce or Fetch response are spliced from the upstream's
    // frame: one gathered write, no copy.
    const auto& buf = w.buffer();
    std::vector<asio::const_buffer> pieces;
    std::size_t from = 0;
    for (const auto& sp : w.splices()) {
        if (sp.at > from) {
            pieces.emplace_back(buf.data() + from, sp.at - from);
        }
        from = sp.at;
        if (const auto* m = std::get_if<protocol::shared_bytes>(&sp.chunk)) {
            pieces.emplace_back(m->data.data(), m->data.size());
        }
    }
    if (buf.size() > from) {
        pieces.emplace_back(buf.data() + from, buf.size() - from);
    }
    boost::system::error_code ec;
    co_await write_client(pieces, ec);
    co_return !ec;
}

asio::awaitable<void> proxy_connection::idle_watchdog() {
    auto self = shared_from_this();
    while (!closed_) {
        idle_timer_.expires_at(last_activity_ + svc_.idle_timeout);
        boost::system::error_code ec;
        co_await idle_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (closed_) {
            break;
        }
        if (!ec && pending_.empty() &&
            std::chrono::steady_clock::now() - last_activity_ >= svc_.idle_timeout) {
            proxy_log().info("conn {} from {}: idle for {} ms (connections.max.idle.ms); closing",
                             id_, peer_, svc_.idle_timeout.count());
            close();
        }
    }
}

}  // namespace sluice::gateway::proxy
