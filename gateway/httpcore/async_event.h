// A change notification that coroutines on any executor can wait for with a deadline (owned by
// gateway/http): a consumer instance's GET records waits for its group member's assignment, a
// stream waits for credit or queue room. Nothing polls: a waiter sleeps on a timer of its own
// executor that notify() cancels.
//
// Use: read version(), check the condition, then wait(seen, deadline); a notify() between
// the two makes wait() return at once, so no change is missed.
// Thread-safe. Waiters must complete before the event is destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sluice::gateway {

class async_event {
public:
    using clock = std::chrono::steady_clock;

    std::uint64_t version() const {
        std::lock_guard lock(mu_);
        return version_;
    }

    /// Wakes every waiter.
    void notify() {
        std::lock_guard lock(mu_);
        ++version_;
        for (auto& w : waiters_) {
            auto timer = w;
            boost::asio::post(timer->get_executor(), [timer] { timer->cancel(); });
        }
        waiters_.clear();
    }

    /// Returns when version() differs from `seen` or at `deadline`; true when it changed.
    boost::asio::awaitable<bool> wait(std::uint64_t seen, clock::time_point deadline) {
        auto ex = co_await boost::asio::this_coro::executor;
        auto timer = std::make_shared<boost::asio::steady_timer>(ex, deadline);
        {
            std::lock_guard lock(mu_);
            if (version_ != seen) {
                co_return true;
            }
            waiters_.push_back(timer);
        }
        boost::system::error_code ec;  // operation_aborted: notified
        co_await timer->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        std::lock_guard lock(mu_);
        waiters_.remove(timer);
        co_return version_ != seen;
    }

private:
    mutable std::mutex mu_;
    std::uint64_t version_ = 0;
    std::list<std::shared_ptr<boost::asio::steady_timer>> waiters_;
};

}  // namespace sluice::gateway
