#include "gateway/core/tcp_listener.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/core/logger.h"

namespace sluice::gateway {
namespace asio = boost::asio;
using asio::ip::tcp;

/// Where the tracker's stop call meets the protocol's stop function. The connection is
/// registered (and can be asked to stop) before its protocol has built the session, so a
/// request that arrives first is remembered and replayed once the function is known.
/// Thread-safe; each requested mode reaches the protocol exactly once.
class tcp_listener::stop_slot {
public:
    void fire(stop_mode mode) {
        connection_tracker::stop_function fn;
        {
            std::lock_guard lock(mu_);
            requested_ = mode;
            fn = fn_;
        }
        if (fn) {
            fn(mode);
        }
    }

    void set(connection_tracker::stop_function fn) {
        std::optional<stop_mode> pending;
        {
            std::lock_guard lock(mu_);
            fn_ = fn;
            pending = requested_;
        }
        if (pending && fn) {
            fn(*pending);
        }
    }

private:
    std::mutex mu_;
    std::optional<stop_mode> requested_;
    connection_tracker::stop_function fn_;
};

tcp_listener::tcp_listener(io_pool& pool, connection_tracker& tracker, metrics_registry& metrics,
                           listener_options options, const endpoint& where,
                           connection_handler handler)
    : pool_(pool),
      tracker_(tracker),
      options_(std::move(options)),
      handler_(std::move(handler)),
      acceptor_(pool.context(0)),
      backoff_timer_(pool.context(0)),
      accepted_(metrics.get_counter("sluice_connections_accepted_total",
                                    "Client connections accepted, per listener",
                                    {{"listener", options_.name}})),
      failures_(metrics.get_counter(
          "sluice_connection_failures_total",
          "Connections ended by an exception escaping their coroutine (a bug), per listener",
          {{"listener", options_.name}})),
      accept_errors_(metrics.get_counter("sluice_accept_errors_total",
                                         "Failed accept calls (EMFILE and friends), per listener",
                                         {{"listener", options_.name}})),
      open_(metrics.get_gauge("sluice_listener_open_connections",
                              "Client connections currently open, per listener",
                              {{"listener", options_.name}})) {
    if (!options_.legacy_accepted_metric.empty()) {
        legacy_accepted_ = &metrics.get_counter(
            options_.legacy_accepted_metric,
            "Connections accepted (same as sluice_connections_accepted_total{listener=\"" +
                options_.name + "\"})");
    }
    // The socket run_server bound before start-up touched the disk, or one bound now (a front
    // built without run_server: tests).
    const auto ep = listen_endpoint(where, options_.flag);
    if (const int fd = pool.take_listening_socket(ep); fd >= 0) {
        boost::system::error_code ec;
        acceptor_.assign(ep.protocol(), fd, ec);
        if (!ec) {
            local_ = acceptor_.local_endpoint(ec);
        }
        if (ec) {
            throw std::runtime_error(options_.flag + ": cannot listen on " + where.to_string() +
                                     ": " + ec.message());
        }
    } else {
        local_ = bind_acceptor(acceptor_, where, options_.flag);
    }
}

void tcp_listener::start() {
    asio::co_spawn(acceptor_.get_executor(), accept_loop(), asio::detached);
}

void tcp_listener::stop() {
    // Set here, not in the posted close: run_server stops the listeners and then asks the
    // tracked connections to finish, and a socket accepted in between must not slip through.
    stopping_.store(true);
    asio::post(acceptor_.get_executor(), [this] {
        boost::system::error_code ec;
        acceptor_.close(ec);
        backoff_timer_.cancel();
    });
}

asio::awaitable<void> tcp_listener::accept_loop() {
    const std::string& name = options_.name;
    auto backoff = std::chrono::milliseconds(min_backoff);
    std::uint64_t failed_in_burst = 0;
    boost::system::error_code burst_error;
    while (!stopping_.load()) {
        boost::system::error_code ec;
        tcp::socket socket = co_await acceptor_.async_accept(
            pool_.next(), asio::redirect_error(asio::use_awaitable, ec));
        if (stopping_.load() || ec == asio::error::operation_aborted || !acceptor_.is_open()) {
            co_return;
        }
        if (ec) {
            // EMFILE, ENFILE, ENOBUFS, ENOMEM: the pending connection stays queued and the next
            // accept would fail at once, so wait. Asio itself retries EINTR, EAGAIN and
            // ECONNABORTED; what reaches here persists for a while.
            accept_errors_.inc();
            if (failed_in_burst == 0 || ec != burst_error) {
                server_log().warn(
                    "{} listener: accept failed: {}; retrying with backoff (up to {} ms)", name,
                    ec.message(), max_backoff.count());
            }
            ++failed_in_burst;
            burst_error = ec;
            backoff_timer_.expires_after(backoff);
            co_await backoff_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            backoff = std::min(backoff * 2, std::chrono::milliseconds(max_backoff));
            continue;
        }
        if (failed_in_burst > 0) {
            server_log().info("{} listener: accepting again after {} failed accepts ({})", name,
                              failed_in_burst, burst_error.message());
            failed_in_burst = 0;
            backoff = min_backoff;
        }
        accepted_.inc();
        if (legacy_accepted_ != nullptr) {
            legacy_accepted_->inc();
        }
        auto slot = std::make_shared<stop_slot>();
        const std::uint64_t id = tracker_.enter([slot](stop_mode mode) { slot->fire(mode); });
        if (stopping_.load()) {
            // Accepted while shutdown began: the tracker may already have asked everyone to
            // finish, so this one is closed unserved.
            tracker_.leave(id);
            co_return;
        }
        open_.add(1);
        auto ex = socket.get_executor();
        asio::co_spawn(ex, serve(std::move(socket), id, std::move(slot)),
                       [this, id](std::exception_ptr failure) { connection_ended(id, failure); });
    }
}

asio::awaitable<void> tcp_listener::serve(tcp::socket socket, std::uint64_t id,
                                          std::shared_ptr<stop_slot> slot) {
    connection_session session = handler_(std::move(socket), id);
    slot->set(std::move(session.stop));
    co_await std::move(session.run);
}

void tcp_listener::connection_ended(std::uint64_t id, std::exception_ptr failure) {
    if (failure) {
        // The spawn boundary of STYLE.md section 4: a bug, but one connection's, not the
        // process's. Its socket is closed as the coroutine frames unwind.
        failures_.inc();
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            server_log().error("{} conn {}: connection failed: {}; closed", options_.name, id,
                               e.what());
        } catch (...) {
            server_log().error("{} conn {}: connection failed: non-standard exception; closed",
                               options_.name, id);
        }
    }
    open_.add(-1);
    tracker_.leave(id);
}

}  // namespace sluice::gateway
