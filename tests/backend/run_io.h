// Driving coroutines on an io_context of the test's thread, bounded: what the client-level and
// backend fixtures (tests/backend/contract, tests/backend/upstream) share.
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

namespace sluice::backend::test {

/// Runs `io` until `done()` holds; false after `limit`. An io_context that runs out of work is
/// restarted (work may arrive from other threads: librdkafka's, a pool's).
template <typename Pred>
bool run_io_until(boost::asio::io_context& io, Pred done,
                  std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    io.restart();
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        if (io.run_one_for(std::chrono::milliseconds(10)) == 0) {
            io.restart();
        }
    }
    return true;
}

/// Runs `a` on `io` until it completes and returns its value; rethrows what it threw. A call
/// that does not complete within `limit` throws std::runtime_error naming `what` (which fails
/// the test).
template <typename T>
T run_io(boost::asio::io_context& io, boost::asio::awaitable<T> a,
         std::chrono::milliseconds limit = std::chrono::seconds(20),
         const char* what = "a call") {
    auto out = std::make_shared<std::optional<T>>();
    auto error = std::make_shared<std::exception_ptr>();
    boost::asio::co_spawn(io, std::move(a), [out, error](std::exception_ptr e, T v) {
        *error = e;
        if (!e) {
            out->emplace(std::move(v));
        }
    });
    const bool done = run_io_until(io, [&] { return out->has_value() || *error; }, limit);
    if (*error) {
        std::rethrow_exception(*error);
    }
    if (!done) {
        throw std::runtime_error(std::string(what) + " did not complete within " +
                                 std::to_string(limit.count()) + " ms");
    }
    return std::move(**out);
}

}  // namespace sluice::backend::test
