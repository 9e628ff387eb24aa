#include "backend/log/data_waiter.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sluice::backend::log {

timer_waiter::timer_waiter(boost::asio::any_io_executor ex) : timer_(std::move(ex)) {}

void timer_waiter::notify() noexcept {
    if (notified_.exchange(true, std::memory_order_acq_rel)) {
        return;
    }
    // The timer is not thread-safe: cancel it on its own executor.
    if (auto self = weak_from_this().lock()) {
        boost::asio::post(timer_.get_executor(), [self] { self->timer_.cancel(); });
    }
}

boost::asio::awaitable<bool> timer_waiter::wait_until(
    std::chrono::steady_clock::time_point deadline) {
    auto self = shared_from_this();
    if (notified()) {
        co_return true;
    }
    timer_.expires_at(deadline);
    boost::system::error_code ec;
    co_await timer_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    co_return notified();
}

}  // namespace sluice::backend::log
