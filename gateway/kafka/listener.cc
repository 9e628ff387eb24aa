#include "gateway/kafka/listener.h"

#include <stdexcept>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/kafka/connection.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

tcp::endpoint resolve_endpoint(const endpoint& where) {
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(where.host, ec);
    if (ec) {
        if (where.host == "localhost") {
            addr = asio::ip::address_v4::loopback();
        } else {
            throw std::runtime_error("cannot listen on '" + where.host +
                                     "': not an IP address (" + ec.message() + ")");
        }
    }
    return tcp::endpoint(addr, where.port);
}

}  // namespace

kafka_listener::kafka_listener(io_pool& pool, services& svc, connection_tracker& tracker,
                               const endpoint& where)
    : pool_(pool),
      svc_(svc),
      tracker_(tracker),
      dispatcher_(svc),
      acceptor_(pool.context(0)),
      accepted_(svc.metrics.get_counter("sluice_kafka_connections_accepted_total",
                                        "Kafka connections accepted")) {
    auto ep = resolve_endpoint(where);
    boost::system::error_code ec;
    acceptor_.open(ep.protocol(), ec);
    if (!ec) {
        acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
        acceptor_.bind(ep, ec);
    }
    if (!ec) {
        acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    }
    if (ec) {
        throw std::runtime_error("--kafka: cannot listen on " + where.to_string() + ": " +
                                 ec.message());
    }
}

tcp::endpoint kafka_listener::local_endpoint() const { return acceptor_.local_endpoint(); }

void kafka_listener::start() {
    asio::co_spawn(acceptor_.get_executor(), accept_loop(), asio::detached);
}

void kafka_listener::stop() {
    asio::post(acceptor_.get_executor(), [this] {
        boost::system::error_code ec;
        acceptor_.close(ec);
    });
}

asio::awaitable<void> kafka_listener::accept_loop() {
    for (;;) {
        boost::system::error_code ec;
        tcp::socket socket = co_await acceptor_.async_accept(
            pool_.next(), asio::redirect_error(asio::use_awaitable, ec));
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) {
            co_return;
        }
        if (ec) {
            // EMFILE and friends: log, back off briefly, keep accepting.
            kafka_log().warn("accept failed: {}", ec.message());
            asio::steady_timer t(acceptor_.get_executor(), std::chrono::milliseconds(50));
            co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            continue;
        }
        accepted_.inc();
        auto ex = socket.get_executor();
        auto conn_holder = std::make_shared<std::shared_ptr<kafka_connection>>();
        const std::uint64_t id = tracker_.enter([conn_holder](stop_mode mode) {
            if (auto c = std::atomic_load(conn_holder.get())) {
                if (mode == stop_mode::finish) {
                    c->stop();
                } else {
                    c->cut();
                }
            }
        });
        auto conn = std::make_shared<kafka_connection>(std::move(socket), svc_, dispatcher_, id);
        std::atomic_store(conn_holder.get(), conn);
        asio::co_spawn(ex, conn->run(), [this, id, conn](std::exception_ptr) {
            tracker_.leave(id);
        });
    }
}

}  // namespace sluice::gateway
