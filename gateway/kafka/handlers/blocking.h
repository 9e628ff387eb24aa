// Admin calls of the log do blocking file work (a topic's creation writes and syncs files and
// directories for every partition: seconds for thousands of partitions). Run on an io thread,
// that would stall every connection the thread serves; run_blocking moves the call to the
// broker's admin pool and resumes the handler on its own executor with the result.
#pragma once

#include <type_traits>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/server/services.h"

namespace sluice::gateway {

/// f runs on svc.admin (inline when there is none); it may capture the handler's locals by
/// reference, since the handler stays suspended until f returns.
template <class F>
boost::asio::awaitable<std::invoke_result_t<F&>> run_blocking(const services& svc, F f) {
    using result_type = std::invoke_result_t<F&>;
    if (svc.admin == nullptr) {
        co_return f();
    }
    co_return co_await boost::asio::co_spawn(
        svc.admin->get_executor(),
        [&f]() -> boost::asio::awaitable<result_type> { co_return f(); },
        boost::asio::use_awaitable);
}

}  // namespace sluice::gateway
