#include "gateway/kafka/connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "gateway/kafka/logger.h"
#include "gateway/policy/audit.h"
#include "protocol/core/bytes.h"

namespace sluice::gateway {
namespace asio = boost::asio;
using asio::ip::tcp;

kafka_connection::kafka_connection(tcp::socket socket, services& svc, dispatcher& disp,
                                   std::uint64_t id, security_protocol security,
                                   std::shared_ptr<auth::tls_server_context> tls)
    : socket_(std::move(socket)),
      tls_context_(std::move(tls)),
      svc_(svc),
      dispatcher_(disp),
      security_(security),
      writer_wakeup_(socket_.get_executor()),
      reader_wakeup_(socket_.get_executor()),
      idle_timer_(socket_.get_executor()),
      last_activity_(std::chrono::steady_clock::now()) {
    info_.id = id;
    boost::system::error_code ec;
    info_.peer = socket_.remote_endpoint(ec);
    info_.local = socket_.local_endpoint(ec);
    info_.socket_fd = socket_.native_handle();
    socket_.set_option(tcp::no_delay(true), ec);
    if (tls_context_) {
        tls_ = std::make_unique<asio::ssl::stream<tcp::socket>>(std::move(socket_),
                                                                tls_context_->ssl);
    }
}

void kafka_connection::stop() {
    // Graceful: stop reading new requests; the write loop sends the responses of the requests
    // already read (their appends and fsyncs complete) and then closes the socket.
    asio::post(sock().get_executor(), [self = shared_from_this()] {
        self->stopping_ = true;
        self->svc_.kafka_budget.cancel(self.get());  // a reader waiting there ends
        if (!self->closed_) {
            boost::system::error_code ec;
            self->sock().shutdown(tcp::socket::shutdown_receive, ec);
            self->wake(self->reader_wakeup_);
        }
    });
}

void kafka_connection::cut() {
    asio::post(sock().get_executor(), [self = shared_from_this()] { self->close(); });
}

void kafka_connection::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    boost::system::error_code ec;
    sock().shutdown(tcp::socket::shutdown_both, ec);
    sock().close(ec);
    // Responses that will never be sent: their memory and their share of the budget go now,
    // not when the last running handler of this connection finishes.
    pending_.clear();
    svc_.kafka_budget.cancel(this);
    wake(writer_wakeup_);
    wake(reader_wakeup_);
    idle_timer_.cancel();
}

asio::awaitable<void> kafka_connection::run() {
    auto self = shared_from_this();
    kafka_log().debug("conn {}: accepted from {}", info_.id, info_.peer.address().to_string());
    if (tls_ && !co_await tls_handshake()) {
        close();
        co_return;
    }
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(ex, idle_watchdog(), asio::detached);
    asio::co_spawn(ex, write_loop(), asio::detached);
    try {
        co_await read_loop();
    } catch (const std::exception& e) {
        kafka_log().error("conn {}: read loop failed: {}", info_.id, e.what());
        close();
    }
    reader_done_ = true;
    wake(writer_wakeup_);
    kafka_log().debug("conn {}: reader finished", info_.id);
}

asio::awaitable<void> kafka_connection::read_loop() {
    const auto max_frame = static_cast<std::uint64_t>(svc_.kafka.max_request_bytes);
    const auto max_in_flight = static_cast<std::size_t>(svc_.kafka.max_in_flight);
    std::byte size_prefix[4];
    while (!closed_) {
        boost::system::error_code ec;
        // A quota throttled an earlier request: read nothing until the throttle time is over
        // (KIP-219's muted channel); the client's next requests wait in the socket. stop() and
        // close() end the wait (they wake reader_wakeup_); so does each response written, after
        // which the loop waits again.
        while (!closed_ && !stopping_ && std::chrono::steady_clock::now() < muted_until_) {
            reader_wakeup_.expires_at(muted_until_);
            co_await reader_wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        if (closed_ || stopping_) {
            co_return;
        }
        co_await read_exactly(asio::buffer(size_prefix, 4), ec);
        if (ec) {
            // A TLS peer that closes the TCP connection without close_notify: stream_truncated.
            if (ec != asio::error::eof && ec != asio::error::operation_aborted &&
                ec != asio::error::connection_reset && ec != asio::ssl::error::stream_truncated) {
                kafka_log().debug("conn {}: read failed: {}", info_.id, ec.message());
                close();
            }
            // On a clean end of input the write loop sends what is pending, then closes.
            co_return;
        }
        last_activity_ = std::chrono::steady_clock::now();
        const std::int32_t size = protocol::load_i32(size_prefix);
        // A bare SASL token (after SaslHandshake v0) may be shorter than a request header.
        const std::int32_t min_size = security_.raw_sasl_tokens ? 0 : 8;
        if (size < min_size || static_cast<std::uint64_t>(size) > max_frame) {
            kafka_log().warn(
                "conn {} from {}: frame size {} outside [{}, {}] (socket.request.max.bytes); "
                "closing",
                info_.id, info_.peer.address().to_string(), size, min_size, max_frame);
            close();
            co_return;
        }
        // queued.max.request.bytes / queued.max.requests: reserve before allocating. While the
        // bound over all connections is reached, this waits (reading nothing) until other
        // requests are answered; stop() and close() end the wait.
        if (stopping_) {
            co_return;
        }
        request_budget::reservation reserved = co_await svc_.kafka_budget.acquire(size, this);
        if (!reserved || closed_ || stopping_) {
            co_return;
        }
        last_activity_ = std::chrono::steady_clock::now();
        auto frame = std::make_shared<protocol::byte_buffer>(static_cast<std::size_t>(size));
        frame->resize(static_cast<std::size_t>(size));
        co_await read_exactly(asio::buffer(frame->data(), frame->size()), ec);
        if (ec) {
            kafka_log().debug("conn {}: connection ended inside a {}-byte frame: {}", info_.id,
                              size, ec.message());
            close();
            co_return;
        }
        last_activity_ = std::chrono::steady_clock::now();
        auto s = std::make_shared<slot>();
        s->reserved = std::move(reserved);
        pending_.push_back(s);
        asio::co_spawn(sock().get_executor(), handle(std::move(frame), s),
                       [self = shared_from_this()](std::exception_ptr e) {
                           if (e) {
                               try {
                                   std::rethrow_exception(e);
                               } catch (const std::exception& ex) {
                                   kafka_log().error("conn {}: request handler failed: {}",
                                                     self->info_.id, ex.what());
                               }
                               self->close();
                           }
                       });
        // Backpressure: stop reading while too many requests wait for their responses.
        while (!closed_ && pending_.size() >= max_in_flight) {
            reader_wakeup_.expires_at(asio::steady_timer::time_point::max());
            co_await reader_wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
    }
}

asio::awaitable<void> kafka_connection::handle(std::shared_ptr<protocol::byte_buffer> frame,
                                               std::shared_ptr<slot> s) {
    s->result = co_await dispatcher_.dispatch(info_, security_, std::move(frame));
    if (s->result.throttle.count() > 0) {
        muted_until_ =
            std::max(muted_until_, std::chrono::steady_clock::now() + s->result.throttle);
        if (s->result.delay) {
            // compat: a client older than KIP-219 does not back off by itself, so the response
            // waits out the throttle time (a timer: the connection costs nothing meanwhile).
            asio::steady_timer delay(sock().get_executor(), s->result.throttle);
            boost::system::error_code ec;
            co_await delay.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
    }
    s->ready = true;
    wake(writer_wakeup_);
}

asio::awaitable<void> kafka_connection::write_loop() {
    auto self = shared_from_this();
    while (true) {
        while (!closed_ && !pending_.empty() && pending_.front()->ready) {
            auto s = pending_.front();
            pending_.pop_front();
            wake(reader_wakeup_);
            switch (s->result.what) {
                case dispatch_result::action::close:
                    close();
                    break;
                case dispatch_result::action::no_response:
                    break;
                case dispatch_result::action::respond:
                    if (!co_await write_response(s->result.response)) {
                        close();
                    }
                    break;
            }
            if (s->result.close_after) {
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

asio::awaitable<bool> kafka_connection::write_response(const protocol::writer& w) {
    if (tls_) {
        co_return co_await write_response_tls(w);
    }
    const auto& buf = w.buffer();
    std::vector<asio::const_buffer> pieces;
    std::size_t from = 0;
    boost::system::error_code ec;
    auto flush = [&]() -> asio::awaitable<bool> {
        if (!pieces.empty()) {
            co_await asio::async_write(socket_, pieces,
                                       asio::redirect_error(asio::use_awaitable, ec));
            pieces.clear();
        }
        co_return !ec;
    };
    for (const auto& sp : w.splices()) {
        if (sp.at > from) {
            pieces.emplace_back(buf.data() + from, sp.at - from);
        }
        from = sp.at;
        if (const auto* m = std::get_if<protocol::shared_bytes>(&sp.chunk)) {
            pieces.emplace_back(m->data.data(), m->data.size());
            continue;
        }
        // A file region: send what is buffered, then let the kernel copy file -> socket.
        const auto& region = std::get<protocol::file_region>(sp.chunk);
        if (!co_await flush()) {
            co_return false;
        }
        off_t pos = static_cast<off_t>(region.position);
        std::size_t left = region.length;
        if (!socket_.native_non_blocking()) {
            socket_.native_non_blocking(true, ec);
        }
        while (left > 0) {
            ssize_t n = ::sendfile(socket_.native_handle(), region.fd, &pos, left);
            if (n > 0) {
                left -= static_cast<std::size_t>(n);
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                co_await socket_.async_wait(tcp::socket::wait_write,
                                            asio::redirect_error(asio::use_awaitable, ec));
                if (ec) {
                    co_return false;
                }
                continue;
            }
            // n == 0: the file ended early; anything else: a socket or file error. Either
            // way the frame can no longer be completed.
            kafka_log().warn("conn {}: sendfile failed after {} of {} bytes: {}", info_.id,
                             region.length - left, region.length,
                             n == 0 ? "file shorter than expected" : std::strerror(errno));
            co_return false;
        }
    }
    if (buf.size() > from) {
        pieces.emplace_back(buf.data() + from, buf.size() - from);
    }
    co_return co_await flush();
}

asio::awaitable<void> kafka_connection::read_exactly(asio::mutable_buffer b,
                                                     boost::system::error_code& ec) {
    if (tls_) {
        // compat: librdkafka (socket.nagle.disable=false, its default) writes a request as
        // several TLS records, one write each; under Nagle each later record waits for the ACK
        // of the first, which delayed ACKs hold back ~40 ms (a Fetch took 40 ms per round
        // trip). TCP_QUICKACK after each record read sends the pending ACK at once. Plaintext
        // requests leave librdkafka in one writev, so that path does not need it.
        const int one = 1;
        while (b.size() > 0) {
            const std::size_t n = co_await tls_->async_read_some(
                b, asio::redirect_error(asio::use_awaitable, ec));
            ::setsockopt(sock().native_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
            if (ec) {
                co_return;
            }
            b += n;
        }
    } else {
        co_await asio::async_read(socket_, b, asio::redirect_error(asio::use_awaitable, ec));
    }
}

asio::awaitable<bool> kafka_connection::tls_handshake() {
    const std::string who =
        fmt::format("conn {} from {}", info_.id, info_.peer.address().to_string());
    const audit_source source{"User:ANONYMOUS", audit_client_of(info_.peer), "kafka"};
    const bool done = co_await bounded_tls_handshake(*tls_, sock(), shared_from_this(),
                                                     kafka_log(), who, source);
    if (!done) {
        co_return false;
    }
    if (security_.protocol != security_protocol::ssl) {
        co_return true;  // SASL_SSL: the principal comes from the SASL login
    }
    // No client certificate: User:ANONYMOUS, as Kafka has it.
    auto principal = tls_client_principal(*tls_context_, tls_->native_handle(), who, source);
    if (!principal) {
        co_return false;
    }
    security_.principal = std::move(*principal);
    co_return true;
}

asio::awaitable<bool> kafka_connection::write_response_tls(const protocol::writer& w) {
    // No sendfile under TLS: the response is gathered into one buffer (each stored batch read
    // into it once with pread) and encrypted from there in full-size TLS records, rather than
    // one record per small piece. The buffer is written out whenever it is full.
    constexpr std::size_t buffer_bytes = std::size_t{1} << 20;
    const auto& buf = w.buffer();
    std::size_t total = buf.size();
    for (const auto& sp : w.splices()) {
        if (const auto* m = std::get_if<protocol::shared_bytes>(&sp.chunk)) {
            total += m->data.size();
        } else {
            total += std::get<protocol::file_region>(sp.chunk).length;
        }
    }
    const std::size_t capacity = std::min(total, buffer_bytes);
    auto out = std::make_unique_for_overwrite<std::byte[]>(capacity);
    std::size_t used = 0;
    std::size_t from = 0;
    boost::system::error_code ec;
    auto flush = [&]() -> asio::awaitable<bool> {
        if (used > 0) {
            co_await asio::async_write(*tls_, asio::buffer(out.get(), used),
                                       asio::redirect_error(asio::use_awaitable, ec));
            used = 0;
        }
        co_return !ec;
    };
    auto append = [&](const std::byte* data, std::size_t size) -> asio::awaitable<bool> {
        while (size > 0) {
            if (used == capacity && !co_await flush()) {
                co_return false;
            }
            const std::size_t n = std::min(size, capacity - used);
            std::memcpy(out.get() + used, data, n);
            used += n;
            data += n;
            size -= n;
        }
        co_return true;
    };
    for (const auto& sp : w.splices()) {
        if (sp.at > from && !co_await append(buf.data() + from, sp.at - from)) {
            co_return false;
        }
        from = sp.at;
        if (const auto* m = std::get_if<protocol::shared_bytes>(&sp.chunk)) {
            if (!co_await append(m->data.data(), m->data.size())) {
                co_return false;
            }
            continue;
        }
        const auto& region = std::get<protocol::file_region>(sp.chunk);
        std::size_t done = 0;
        while (done < region.length) {
            if (used == capacity && !co_await flush()) {
                co_return false;
            }
            const std::size_t want = std::min(region.length - done, capacity - used);
            const ssize_t n = ::pread(region.fd, out.get() + used, want,
                                      static_cast<off_t>(region.position + done));
            if (n > 0) {
                used += static_cast<std::size_t>(n);
                done += static_cast<std::size_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) {
                continue;
            }
            kafka_log().warn("conn {}: read of a stored batch failed after {} of {} bytes: {}",
                             info_.id, done, region.length,
                             n == 0 ? "file shorter than expected" : std::strerror(errno));
            co_return false;
        }
    }
    if (buf.size() > from && !co_await append(buf.data() + from, buf.size() - from)) {
        co_return false;
    }
    co_return co_await flush();
}

asio::awaitable<void> kafka_connection::idle_watchdog() {
    auto self = shared_from_this();
    const auto idle = std::chrono::milliseconds(svc_.kafka.idle_timeout_ms);
    while (!closed_) {
        idle_timer_.expires_at(last_activity_ + idle);
        boost::system::error_code ec;
        co_await idle_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (closed_) {
            break;
        }
        if (!ec && pending_.empty() &&
            std::chrono::steady_clock::now() - last_activity_ >= idle) {
            kafka_log().info("conn {} from {}: idle for {} ms (connections.max.idle.ms); closing",
                             info_.id, info_.peer.address().to_string(), idle.count());
            close();
        }
    }
}

}  // namespace sluice::gateway
