#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/core/metrics.h"
#include "gateway/core/request_budget.h"
#include "tests/gateway/coroutine_support.h"

namespace sluice::gateway {
namespace {
namespace asio = boost::asio;
using reservation = request_budget::reservation;

using testing::run_until_done;
using testing::yield;

/// A parked acquire, recorded where the test can see whether and how it ended.
struct parked_request {
    bool done = false;
    reservation got;
};

asio::awaitable<void> acquire_into(request_budget& b, std::int64_t bytes, parked_request& out,
                                   std::vector<int>* order = nullptr, int tag = 0) {
    out.got = co_await b.acquire(bytes, &out);
    out.done = true;
    if (order) {
        order->push_back(tag);
    }
}

std::int64_t gauge_value(metrics_registry& m, const std::string& name) {
    return m.get_gauge(name, "").value();
}

TEST(RequestBudget, AdmitsWithoutWaitingWhileBothBoundsHold) {
    metrics_registry m;
    request_budget b(100, 3, m);
    run_until_done([](request_budget& b) -> asio::awaitable<void> {
        auto r1 = co_await b.acquire(40, nullptr);
        auto r2 = co_await b.acquire(60, nullptr);
        EXPECT_TRUE(r1);
        EXPECT_TRUE(r2);
        EXPECT_EQ(b.queued_bytes(), 100);
        EXPECT_EQ(b.queued_requests(), 2);
        EXPECT_EQ(b.waiting(), 0u);
    }(b));
    EXPECT_EQ(b.queued_bytes(), 0);
    EXPECT_EQ(b.queued_requests(), 0);
}

TEST(RequestBudget, ParksWhenTheByteBoundIsReachedUntilARelease) {
    metrics_registry m;
    request_budget b(100, 500, m);
    run_until_done([](request_budget& b) -> asio::awaitable<void> {
        auto held = co_await b.acquire(60, nullptr);
        parked_request second;
        asio::co_spawn(co_await asio::this_coro::executor, acquire_into(b, 60, second),
                       asio::detached);
        co_await yield();
        EXPECT_FALSE(second.done);
        EXPECT_EQ(b.waiting(), 1u);
        held.reset();
        co_await yield();  // the grant is posted, then the waiter resumes
        co_await yield();
        EXPECT_TRUE(second.done);
        EXPECT_TRUE(second.got);
        EXPECT_EQ(b.queued_bytes(), 60);
        EXPECT_EQ(b.waiting(), 0u);
    }(b));
}

TEST(RequestBudget, ParksWhenTheRequestBoundIsReached) {
    metrics_registry m;
    request_budget b(-1, 2, m);
    run_until_done([](request_budget& b) -> asio::awaitable<void> {
        auto r1 = co_await b.acquire(10, nullptr);
        auto r2 = co_await b.acquire(10, nullptr);
        parked_request third;
        asio::co_spawn(co_await asio::this_coro::executor, acquire_into(b, 10, third),
                       asio::detached);
        co_await yield();
        EXPECT_FALSE(third.done);
        r1.reset();
        co_await yield();
        co_await yield();
        EXPECT_TRUE(third.got);
        EXPECT_EQ(b.queued_requests(), 2);
    }(b));
}

TEST(RequestBudget, GrantsParkedCallersInArrivalOrder) {
    metrics_registry m;
    request_budget b(100, 500, m);
    run_until_done([](request_budget& b) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto held = co_await b.acquire(90, nullptr);
        std::vector<int> order;
        parked_request big;
        parked_request small;
        asio::co_spawn(ex, acquire_into(b, 80, big, &order, 1), asio::detached);
        co_await yield();
        // 5 bytes would fit beside the 90, but the 80 came first: no overtaking.
        asio::co_spawn(ex, acquire_into(b, 5, small, &order, 2), asio::detached);
        co_await yield();
        EXPECT_FALSE(small.done);
        EXPECT_EQ(b.waiting(), 2u);
        held.reset();
        co_await yield();
        co_await yield();
        EXPECT_TRUE(big.got);
        EXPECT_TRUE(small.got);
        EXPECT_EQ(order, (std::vector<int>{1, 2}));
        EXPECT_EQ(b.queued_bytes(), 85);
    }(b));
}

TEST(RequestBudget, LetsARequestLargerThanTheBudgetThroughAlone) {
    metrics_registry m;
    request_budget b(100, 500, m);
    run_until_done([](request_budget& b) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto small = co_await b.acquire(10, nullptr);
        parked_request huge;
        parked_request after;
        asio::co_spawn(ex, acquire_into(b, 1000, huge), asio::detached);
        co_await yield();
        asio::co_spawn(ex, acquire_into(b, 10, after), asio::detached);
        co_await yield();
        EXPECT_FALSE(huge.done);
        small.reset();
        co_await yield();
        co_await yield();
        // Alone in the budget; the one behind it waits for it to be answered.
        EXPECT_TRUE(huge.got);
        EXPECT_FALSE(after.done);
        EXPECT_EQ(b.queued_bytes(), 1000);
        huge.got.reset();
        co_await yield();
        co_await yield();
        EXPECT_TRUE(after.got);
    }(b));
}

TEST(RequestBudget, CancelEndsTheWaitEmptyAndUnblocksThoseBehind) {
    metrics_registry m;
    request_budget b(100, 500, m);
    run_until_done([](request_budget& b) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto held = co_await b.acquire(50, nullptr);
        parked_request big;
        parked_request small;
        asio::co_spawn(ex, acquire_into(b, 80, big), asio::detached);
        co_await yield();
        asio::co_spawn(ex, acquire_into(b, 20, small), asio::detached);
        co_await yield();
        b.cancel(&big);
        co_await yield();
        co_await yield();
        EXPECT_TRUE(big.done);
        EXPECT_FALSE(big.got);
        EXPECT_TRUE(small.got);
        EXPECT_EQ(b.queued_bytes(), 70);
        EXPECT_EQ(b.waiting(), 0u);
        b.cancel(&big);  // nothing parked under that owner any more: no effect
        EXPECT_EQ(b.queued_bytes(), 70);
    }(b));
}

TEST(RequestBudget, CloseEndsEveryWaitAndEveryLaterAcquire) {
    metrics_registry m;
    request_budget b(10, 500, m);
    run_until_done([](request_budget& b) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto held = co_await b.acquire(10, nullptr);
        parked_request one;
        parked_request two;
        asio::co_spawn(ex, acquire_into(b, 5, one), asio::detached);
        asio::co_spawn(ex, acquire_into(b, 5, two), asio::detached);
        co_await yield();
        b.close();
        co_await yield();
        co_await yield();
        EXPECT_TRUE(one.done && two.done);
        EXPECT_FALSE(one.got || two.got);
        auto later = co_await b.acquire(1, nullptr);
        EXPECT_FALSE(later);
        EXPECT_EQ(b.queued_requests(), 1);  // the one already held stays counted until released
    }(b));
}

TEST(RequestBudget, GaugesShowBytesRequestsAndWaiters) {
    metrics_registry m;
    request_budget b(100, 500, m);
    run_until_done([](request_budget& b, metrics_registry& m) -> asio::awaitable<void> {
        auto held = co_await b.acquire(70, nullptr);
        parked_request second;
        asio::co_spawn(co_await asio::this_coro::executor, acquire_into(b, 70, second),
                       asio::detached);
        co_await yield();
        EXPECT_EQ(gauge_value(m, "sluice_kafka_queued_request_bytes"), 70);
        EXPECT_EQ(gauge_value(m, "sluice_kafka_queued_requests"), 1);
        EXPECT_EQ(gauge_value(m, "sluice_kafka_connections_waiting_for_queue"), 1);
        EXPECT_EQ(m.get_counter("sluice_kafka_queue_waits_total", "").value(), 1u);
        held.reset();
        co_await yield();
        co_await yield();
        EXPECT_EQ(gauge_value(m, "sluice_kafka_connections_waiting_for_queue"), 0);
    }(b, m));
    EXPECT_EQ(gauge_value(m, "sluice_kafka_queued_request_bytes"), 0);
    EXPECT_EQ(gauge_value(m, "sluice_kafka_queued_requests"), 0);
}

TEST(RequestBudget, AParkedCallerResumesOnItsOwnExecutor) {
    metrics_registry m;
    request_budget b(100, 500, m);
    std::optional<reservation> held;
    run_until_done(
        [](request_budget& b, std::optional<reservation>& held) -> asio::awaitable<void> {
            held.emplace(co_await b.acquire(100, nullptr));
        }(b, held));

    // The waiter runs on its own io_context and thread; the release comes from this thread.
    asio::io_context waiter_io;
    std::atomic<bool> resumed_on_waiter_thread{false};
    std::atomic<bool> done{false};
    asio::co_spawn(
        waiter_io,
        [](request_budget& b, asio::io_context& io, std::atomic<bool>& on_thread,
           std::atomic<bool>& done) -> asio::awaitable<void> {
            auto r = co_await b.acquire(50, nullptr);
            on_thread = static_cast<bool>(r) && io.get_executor().running_in_this_thread();
            done = true;
        }(b, waiter_io, resumed_on_waiter_thread, done),
        asio::detached);
    // run() returns only once the waiter has finished: while parked it counts as work.
    std::thread t([&] { waiter_io.run(); });
    while (b.waiting() == 0 && !done) {
        std::this_thread::yield();  // until the waiter has parked
    }
    held->reset();
    t.join();
    EXPECT_TRUE(done);
    EXPECT_TRUE(resumed_on_waiter_thread);
}

TEST(RequestBudget, ManyThreadsNeverExceedTheBoundAndAllFinish) {
    metrics_registry m;
    constexpr std::int64_t bound = 1000;
    request_budget b(bound, 7, m);
    constexpr int threads = 4;
    constexpr int callers_per_thread = 8;
    constexpr int rounds = 200;
    std::atomic<std::int64_t> in_use{0};
    std::atomic<std::int64_t> peak{0};
    std::atomic<int> peak_requests{0};
    std::atomic<int> live{0};
    std::atomic<int> finished{0};
    std::vector<std::unique_ptr<asio::io_context>> ios;
    for (int i = 0; i < threads; ++i) {
        ios.push_back(std::make_unique<asio::io_context>(1));
    }
    struct shared {
        request_budget& b;
        std::atomic<std::int64_t>& in_use;
        std::atomic<std::int64_t>& peak;
        std::atomic<int>& live;
        std::atomic<int>& peak_requests;
        std::atomic<int>& finished;
    } s{b, in_use, peak, live, peak_requests, finished};
    auto caller = [](shared& s, int seed) -> asio::awaitable<void> {
        for (int r = 0; r < rounds; ++r) {
            const std::int64_t bytes = 50 + (seed * 37 + r * 11) % 400;
            auto got = co_await s.b.acquire(bytes, nullptr);
            EXPECT_TRUE(got);
            const auto now = s.in_use.fetch_add(bytes) + bytes;
            const int requests = s.live.fetch_add(1) + 1;
            std::int64_t p = s.peak.load();
            while (now > p && !s.peak.compare_exchange_weak(p, now)) {
            }
            int q = s.peak_requests.load();
            while (requests > q && !s.peak_requests.compare_exchange_weak(q, requests)) {
            }
            co_await yield();  // hold it across a suspension, as a request in flight does
            s.live.fetch_sub(1);
            s.in_use.fetch_sub(bytes);
            got.reset();
        }
        s.finished.fetch_add(1);
    };
    for (int t = 0; t < threads; ++t) {
        for (int c = 0; c < callers_per_thread; ++c) {
            asio::co_spawn(*ios[t], caller(s, t * callers_per_thread + c), asio::detached);
        }
    }
    std::vector<std::thread> pool;
    for (auto& io : ios) {
        pool.emplace_back([&io] { io->run(); });
    }
    for (auto& t : pool) {
        t.join();
    }
    EXPECT_EQ(finished.load(), threads * callers_per_thread);
    EXPECT_LE(peak.load(), bound);
    EXPECT_LE(peak_requests.load(), 7);
    EXPECT_GT(m.get_counter("sluice_kafka_queue_waits_total", "").value(), 0u);
    EXPECT_EQ(b.queued_bytes(), 0);
    EXPECT_EQ(b.queued_requests(), 0);
    EXPECT_EQ(b.waiting(), 0u);
}

}  // namespace
}  // namespace sluice::gateway
