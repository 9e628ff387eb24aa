// Parking a call until something changes in a queue (owned by backend/queue): a long-polling
// receive waits for a message to become available, the tailer for room in the read-ahead
// budget, a send for a concurrent duplicate to settle. No polling: whoever makes the change
// wakes the parked calls.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sluice::backend::queue {

/// One parked call: wait_until() returns when wake() was called (true) or at the deadline.
/// Lifecycle: created with std::make_shared on the waiting coroutine's executor, registered
/// with a wakeup_list, awaited once. Concurrency: wake() from any thread; wait_until() on the
/// executor given at construction, which must not run handlers concurrently, so that a wake()
/// between the check and the wait is not lost (its cancel is queued behind the wait).
class wakeup : public std::enable_shared_from_this<wakeup> {
public:
    explicit wakeup(boost::asio::any_io_executor ex) : timer_(std::move(ex)) {}

    void wake() noexcept {
        if (woken_.exchange(true, std::memory_order_acq_rel)) {
            return;
        }
        boost::asio::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
    }
    bool woken() const { return woken_.load(std::memory_order_acquire); }

    boost::asio::awaitable<bool> wait_until(std::chrono::steady_clock::time_point deadline) {
        auto self = shared_from_this();
        if (woken()) {
            co_return true;
        }
        timer_.expires_at(deadline);
        boost::system::error_code ec;
        co_await timer_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        co_return woken();
    }

private:
    boost::asio::steady_timer timer_;
    std::atomic<bool> woken_{false};
};

/// Parked calls in arrival order. Not thread-safe: used under its owner's lock.
class wakeup_list {
public:
    void park(std::shared_ptr<wakeup> w) { parked_.push_back(std::move(w)); }
    /// Wakes the `n` longest-parked calls that still wait.
    void wake(std::size_t n) {
        while (n > 0 && !parked_.empty()) {
            auto w = std::move(parked_.front());
            parked_.pop_front();
            if (!w->woken() && w.use_count() > 1) {  // still held by its waiting call
                w->wake();
                --n;
            }
        }
    }
    void wake_all() {
        for (auto& w : parked_) {
            w->wake();
        }
        parked_.clear();
    }
    /// Forgets calls that stopped waiting (their deadline passed), so the list stays short.
    void prune() {
        std::erase_if(parked_, [](const auto& w) { return w->woken() || w.use_count() == 1; });
    }
    bool empty() const { return parked_.empty(); }
    std::size_t size() const { return parked_.size(); }

private:
    std::deque<std::shared_ptr<wakeup>> parked_;
};

}  // namespace sluice::backend::queue
