// Waiting for new data in a partition without polling (owned by backend/log): a fetch with
// max_wait and min_bytes registers one waiter on every partition it reads and parks until an
// append to any of them or its deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

namespace sluice::backend::log {

/// Told once about the next append to a partition it was registered on (partition_log::
/// add_waiter), then dropped by that partition. notify() runs on the appending thread, inside
/// no lock of the log, and must be quick and must not throw.
///
/// Partitions hold waiters weakly: whoever waits keeps the shared_ptr alive while waiting;
/// a waiter nobody holds any more is forgotten without being called.
struct data_waiter {
    virtual ~data_waiter() = default;
    virtual void notify() noexcept = 0;
};

/// A data_waiter a coroutine can await: wait_until() returns when notify() was called (true) or
/// at the deadline (false). One waiter can be registered on many partitions at once; the first
/// notify wins, later ones do nothing.
///
/// Lifecycle: create with std::make_shared on the caller's executor, register, wait once.
/// Concurrency: notify() from any thread; wait_until() from a coroutine on the executor given
/// at construction, which must not run handlers concurrently (an io_context run by one thread,
/// or a strand), so that a notify cannot slip between the check and the wait.
class timer_waiter final : public data_waiter, public std::enable_shared_from_this<timer_waiter> {
public:
    explicit timer_waiter(boost::asio::any_io_executor ex);

    void notify() noexcept override;
    bool notified() const { return notified_.load(std::memory_order_acquire); }
    /// Parks until notify() or `deadline`; true when notified.
    boost::asio::awaitable<bool> wait_until(std::chrono::steady_clock::time_point deadline);

private:
    boost::asio::steady_timer timer_;
    std::atomic<bool> notified_{false};
};

}  // namespace sluice::backend::log
