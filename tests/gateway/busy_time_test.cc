#include "gateway/core/busy_time.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sluice::gateway {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// Keeps the thread busy for `d` of wall time.
void spin(std::chrono::nanoseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
    }
}

asio::awaitable<int> work_wait_work(std::chrono::nanoseconds each, std::chrono::nanoseconds wait) {
    spin(each);
    asio::steady_timer t(co_await asio::this_coro::executor, wait);
    co_await t.async_wait(asio::use_awaitable);
    spin(each);
    co_return 7;
}

TEST(BusyTime, ACoroutineOnAMeteredExecutorCountsItsRunningNotItsWaiting) {
    asio::io_context io;
    auto clock = std::make_shared<busy_clock>();
    int answer = 0;
    asio::co_spawn(metered_executor(io.get_executor(), clock), work_wait_work(10ms, 2s),
                   [&](std::exception_ptr e, int v) {
                       ASSERT_FALSE(e);
                       answer = v;
                   });
    io.run_for(30s);

    EXPECT_EQ(answer, 7);
    // Both stretches of work are in, the two seconds of waiting are not.
    EXPECT_GE(clock->total(), 20ms);
    EXPECT_LT(clock->total(), 2s);
}

asio::awaitable<void> awaited_from_a_plain_coroutine(std::shared_ptr<busy_clock> clock,
                                                     bool* done) {
    auto ex = co_await asio::this_coro::executor;
    const int v = co_await asio::co_spawn(metered_executor(ex, clock), work_wait_work(5ms, 1s),
                                          asio::use_awaitable);
    *done = v == 7;
}

TEST(BusyTime, AMeteredChildAwaitedByAPlainCoroutineReturnsItsValue) {
    asio::io_context io;
    auto clock = std::make_shared<busy_clock>();
    bool done = false;
    asio::co_spawn(io, awaited_from_a_plain_coroutine(clock, &done), asio::detached);
    io.run_for(30s);

    EXPECT_TRUE(done);
    EXPECT_GE(clock->total(), 10ms);
    EXPECT_LT(clock->total(), 1s);
}

TEST(BusyTime, AnotherRequestRunInlineIsCountedThereNotInTheOuterOne) {
    asio::io_context io;
    auto outer = std::make_shared<busy_clock>();
    auto inner = std::make_shared<busy_clock>();
    metered_executor outer_ex(io.get_executor(), outer);
    metered_executor inner_ex(io.get_executor(), inner);
    asio::execution::execute(outer_ex, [&] {
        spin(2ms);
        // From inside the io thread, the io_context's executor runs this at once.
        asio::execution::execute(inner_ex, [] { spin(50ms); });
        // The same request nested in itself is counted once.
        asio::execution::execute(outer_ex, [] { spin(2ms); });
    });
    io.run_for(30s);

    EXPECT_GE(inner->total(), 50ms);
    EXPECT_GE(outer->total(), 4ms);
    EXPECT_LT(outer->total(), inner->total());
}

TEST(BusyTime, ARequestReadingItsClockWhileItRunsSeesTheStretchSoFar) {
    asio::io_context io;
    auto clock = std::make_shared<busy_clock>();
    std::chrono::nanoseconds seen{0};
    asio::execution::execute(metered_executor(io.get_executor(), clock), [&] {
        spin(5ms);
        seen = clock->total();  // as a handler reads it before its answer is encoded
    });
    io.run_for(30s);

    EXPECT_GE(seen, 5ms);
    EXPECT_GE(clock->total(), seen);
}

}  // namespace
}  // namespace sluice::gateway
