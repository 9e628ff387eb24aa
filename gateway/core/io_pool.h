// The network threads: one io_context per thread, each run by exactly one thread, so code
// bound to one context needs no locking against itself. Connections are spread over the
// contexts round-robin.
//
// Lifecycle: constructed by run_server, start() launches the threads, stop() asks every
// context to stop and join() waits for the threads. Not copyable.
#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "gateway/core/listening_sockets.h"

namespace sluice::gateway {

class io_pool {
public:
    /// `threads` = 0 means one per core.
    explicit io_pool(unsigned threads);
    ~io_pool();
    io_pool(const io_pool&) = delete;
    io_pool& operator=(const io_pool&) = delete;

    void start();
    /// Lets the contexts run out of work (graceful) or stops them at once (hard).
    void release_work();
    void stop();
    void join();

    std::size_t size() const { return contexts_.size(); }
    boost::asio::io_context& context(std::size_t i) { return *contexts_[i]; }
    /// The next context in round-robin order (thread-safe).
    boost::asio::io_context& next();

    /// The listening sockets run_server bound before start-up touched the disk; each
    /// tcp_listener built on this pool takes its own (start-up only, not thread-safe).
    void adopt_listening_sockets(listening_sockets sockets) { bound_ = std::move(sockets); }
    /// A socket bound for `configured`, or -1 (see listening_sockets::take).
    int take_listening_socket(const boost::asio::ip::tcp::endpoint& configured) {
        return bound_.take(configured);
    }

private:
    using guard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
    std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
    std::vector<guard> guards_;
    std::vector<std::thread> threads_;
    std::atomic<std::size_t> next_{0};
    listening_sockets bound_;
};

}  // namespace sluice::gateway
