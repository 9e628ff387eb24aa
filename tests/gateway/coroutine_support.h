// Running a coroutine to its end in a unit test, shared by the tests of the request and body
// budgets.
#pragma once

#include <exception>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <gtest/gtest.h>

namespace sluice::gateway::testing {

/// Runs `a` on a fresh io_context until it completes (rethrowing what it threw).
inline void run_until_done(boost::asio::awaitable<void> a) {
    boost::asio::io_context io;
    std::exception_ptr error;
    bool done = false;
    boost::asio::co_spawn(io, std::move(a), [&](std::exception_ptr e) {
        error = e;
        done = true;
    });
    io.run();
    if (error) {
        std::rethrow_exception(error);
    }
    ASSERT_TRUE(done) << "the coroutine never completed (parked with nobody to release it)";
}

/// Lets every handler already queued on this coroutine's executor run once.
inline boost::asio::awaitable<void> yield() {
    co_await boost::asio::post(co_await boost::asio::this_coro::executor,
                               boost::asio::use_awaitable);
}

}  // namespace sluice::gateway::testing
