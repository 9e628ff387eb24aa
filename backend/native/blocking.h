// Running blocking work of the native backend (file creation and fsyncs of topic
// administration, producer-state loads, persisting a log start offset) on the backend's own
// thread pool, so that no io thread of a front ever blocks on the disk (owned by
// backend/native).
#pragma once

#include <type_traits>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sluice::backend::native {

/// Runs f() on `pool` and resumes the caller on its own executor with the result; exceptions
/// propagate to the caller. f may capture the caller's locals by reference: the caller stays
/// suspended until f returns.
template <class F>
boost::asio::awaitable<std::invoke_result_t<F&>> run_blocking(boost::asio::any_io_executor pool,
                                                              F f) {
    using result_type = std::invoke_result_t<F&>;
    // The lambda lives in co_spawn's frame until its coroutine completes, and `f` in ours.
    co_return co_await boost::asio::co_spawn(
        pool, [&f]() -> boost::asio::awaitable<result_type> { co_return f(); },
        boost::asio::use_awaitable);
}

}  // namespace sluice::backend::native
