#include "gateway/core/listening_sockets.h"

#include <unistd.h>

#include <stdexcept>
#include <utility>

#include <boost/asio/io_context.hpp>

namespace sluice::gateway {
namespace asio = boost::asio;
using asio::ip::tcp;

tcp::endpoint listen_endpoint(const endpoint& where, const std::string& flag) {
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(where.host, ec);
    if (ec) {
        if (where.host != "localhost") {
            throw std::runtime_error(flag + ": cannot listen on " + where.to_string() +
                                     ": not an IP address (use an IP address or localhost)");
        }
        addr = asio::ip::address_v4::loopback();
    }
    return tcp::endpoint(addr, where.port);
}

tcp::endpoint bind_acceptor(tcp::acceptor& acceptor, const endpoint& where,
                            const std::string& flag) {
    const auto ep = listen_endpoint(where, flag);
    boost::system::error_code ec;
    acceptor.open(ep.protocol(), ec);
    if (!ec) {
        acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    }
    if (!ec) {
        acceptor.bind(ep, ec);
    }
    if (!ec) {
        acceptor.listen(asio::socket_base::max_listen_connections, ec);
    }
    tcp::endpoint local;
    if (!ec) {
        local = acceptor.local_endpoint(ec);
    }
    if (ec) {
        throw std::runtime_error(flag + ": cannot listen on " + where.to_string() + ": " +
                                 ec.message());
    }
    return local;
}

listening_sockets::~listening_sockets() { close_all(); }

listening_sockets::listening_sockets(listening_sockets&& other) noexcept
    : fds_(std::exchange(other.fds_, {})) {}

listening_sockets& listening_sockets::operator=(listening_sockets&& other) noexcept {
    if (this != &other) {
        close_all();
        fds_ = std::exchange(other.fds_, {});
    }
    return *this;
}

void listening_sockets::bind(const endpoint& where, const std::string& flag) {
    // A private context only to bind; the descriptor then waits here for its tcp_listener,
    // which adopts it into the io_pool's context.
    asio::io_context ctx;
    tcp::acceptor acceptor(ctx);
    bind_acceptor(acceptor, where, flag);
    fds_.emplace(listen_endpoint(where, flag), acceptor.release());
}

int listening_sockets::take(const tcp::endpoint& configured) {
    auto it = fds_.find(configured);
    if (it == fds_.end()) {
        return -1;
    }
    const int fd = it->second;
    fds_.erase(it);
    return fd;
}

void listening_sockets::close_all() {
    for (const auto& [ep, fd] : fds_) {
        ::close(fd);
    }
    fds_.clear();
}

}  // namespace sluice::gateway
