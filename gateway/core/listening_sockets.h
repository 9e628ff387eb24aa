// The listening sockets of every front, bound at the very start of run_server: before the data
// dir or the audit log is created, so that a port in use stops sluice before it has made
// anything. The tcp_listener a front builds later takes its socket from here (through the
// io_pool it is given) instead of binding its own.
#pragma once

#include <map>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "gateway/core/config.h"

namespace sluice::gateway {

/// Bound and listening sockets waiting for their tcp_listener, keyed by the address the
/// configuration asked for (port 0 included: several listeners on port 0 each get one of
/// the sockets bound for it, any of them).
///
/// Lifecycle: run_server binds one per listener, then hands the set to the io_pool
/// (io_pool::adopt_listening_sockets); each tcp_listener takes one; the ones nobody took are
/// closed with their owner. Movable, not copyable. Not thread-safe: start-up only.
class listening_sockets {
public:
    listening_sockets() = default;
    ~listening_sockets();
    listening_sockets(listening_sockets&& other) noexcept;
    listening_sockets& operator=(listening_sockets&& other) noexcept;
    listening_sockets(const listening_sockets&) = delete;
    listening_sockets& operator=(const listening_sockets&) = delete;

    /// Binds `where` and listens (SO_REUSEADDR, the system's backlog), as tcp_listener does.
    /// Throws std::runtime_error "FLAG: cannot listen on ADDRESS: REASON".
    void bind(const endpoint& where, const std::string& flag);
    /// A socket bound for `configured` (what listen_endpoint made of the setting), or -1 when
    /// none is left; the caller owns it.
    int take(const boost::asio::ip::tcp::endpoint& configured);

private:
    void close_all();

    std::multimap<boost::asio::ip::tcp::endpoint, int> fds_;
};

/// The address to bind for `where`: an IP address, or "localhost" (127.0.0.1). Throws
/// std::runtime_error naming `flag` for anything else.
boost::asio::ip::tcp::endpoint listen_endpoint(const endpoint& where, const std::string& flag);

/// Opens, binds and listens `acceptor` on `where`; returns the bound address (the real port for
/// port 0). Throws std::runtime_error "FLAG: cannot listen on ADDRESS: REASON".
boost::asio::ip::tcp::endpoint bind_acceptor(boost::asio::ip::tcp::acceptor& acceptor,
                                             const endpoint& where, const std::string& flag);

}  // namespace sluice::gateway
