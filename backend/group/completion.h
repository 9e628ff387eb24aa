// A one-shot result a coroutine can wait for while another thread produces it (owned by
// backend/group): the parked JoinGroup and SyncGroup calls wait on one until the rebalance
// barrier completes.
//
// Lifecycle: create with std::make_shared on the waiting coroutine's executor, hand a
// callback that calls set() to the producer, then wait() once. Concurrency: set() from any
// thread, once; wait() on the executor given at construction, which must not run handlers
// concurrently (an io_context run by one thread, or a strand), so that a set() between the
// check and the wait is not lost (its cancel is queued behind the wait).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sluice::backend::group {

template <typename T>
class completion : public std::enable_shared_from_this<completion<T>> {
public:
    explicit completion(boost::asio::any_io_executor ex) : timer_(std::move(ex)) {}

    void set(T value) {
        {
            std::lock_guard lock(mu_);
            if (value_) {
                return;
            }
            value_.emplace(std::move(value));
        }
        // The timer is not thread-safe: cancel it on its own executor.
        boost::asio::post(timer_.get_executor(),
                          [self = this->shared_from_this()] { self->timer_.cancel(); });
    }

    boost::asio::awaitable<T> wait() {
        auto self = this->shared_from_this();
        for (;;) {
            {
                std::lock_guard lock(mu_);
                if (value_) {
                    co_return std::move(*value_);
                }
            }
            timer_.expires_at(std::chrono::steady_clock::time_point::max());
            boost::system::error_code ec;
            co_await timer_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        }
    }

private:
    boost::asio::steady_timer timer_;
    std::mutex mu_;
    std::optional<T> value_;
};

}  // namespace sluice::backend::group
