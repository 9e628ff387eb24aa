// The queue tests' way to run one coroutine to its end on an io_context the test drives itself
// (bounded: a call that never completes fails the test instead of hanging it).
#pragma once

#include <chrono>
#include <exception>
#include <optional>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

namespace sluice::backend::queue::test_support {

/// Runs `a` on `io` until it completes, at most 20 s; rethrows what it threw.
template <typename T>
T run_on(boost::asio::io_context& io, boost::asio::awaitable<T> a) {
    std::optional<T> out;
    std::exception_ptr error;
    boost::asio::co_spawn(io, std::move(a), [&](std::exception_ptr e, T v) {
        error = e;
        if (!e) {
            out.emplace(std::move(v));
        }
    });
    io.restart();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!out && !error && std::chrono::steady_clock::now() < deadline) {
        io.run_one_for(std::chrono::milliseconds(100));
    }
    if (error) {
        std::rethrow_exception(error);
    }
    EXPECT_TRUE(out) << "the call did not complete";
    return std::move(*out);
}

}  // namespace sluice::backend::queue::test_support
