#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/httpcore/body_budget.h"
#include "gateway/core/metrics.h"
#include "gateway/core/request_budget.h"
#include "tests/gateway/coroutine_support.h"

namespace sluice::gateway {
namespace {
namespace asio = boost::asio;
using namespace std::chrono_literals;
using reservation = request_budget::reservation;

using testing::run_until_done;
using testing::yield;

/// A parked grow or reserve, recorded where the test can see whether and how it ended.
struct parked_call {
    bool done = false;
    bool granted = false;
};

asio::awaitable<void> grow_into(request_budget& b, reservation& r, std::int64_t extra,
                                parked_call& out) {
    out.granted = co_await b.grow(r, extra, &out);
    out.done = true;
}

asio::awaitable<void> reserve_into(body_budget& b, reservation& r, std::int64_t bytes,
                                   parked_call& out) {
    out.granted = co_await b.reserve(r, bytes, &out);
    out.done = true;
}

TEST(RequestBudgetGrow, GrowsWithinTheBoundWithoutWaitingOrCountingARequest) {
    metrics_registry m;
    request_budget b(100, 500, m);
    run_until_done([](request_budget& b) -> asio::awaitable<void> {
        auto r = co_await b.acquire(10, nullptr);
        EXPECT_TRUE(co_await b.grow(r, 30, nullptr));
        EXPECT_EQ(r.bytes(), 40);
        EXPECT_EQ(b.queued_bytes(), 40);
        EXPECT_EQ(b.queued_requests(), 1);
        r.reset();
        EXPECT_EQ(b.queued_bytes(), 0);  // the grown bytes are given back with the rest
        EXPECT_EQ(b.queued_requests(), 0);
    }(b));
}

TEST(RequestBudgetGrow, ParksPastTheBoundUntilAnotherReleases) {
    metrics_registry m;
    request_budget b(100, 500, m);
    run_until_done([](request_budget& b) -> asio::awaitable<void> {
        auto other = co_await b.acquire(60, nullptr);
        auto r = co_await b.acquire(30, nullptr);
        parked_call grow;
        asio::co_spawn(co_await asio::this_coro::executor, grow_into(b, r, 20, grow),
                       asio::detached);
        co_await yield();
        EXPECT_FALSE(grow.done);
        EXPECT_EQ(b.waiting(), 1u);
        EXPECT_EQ(r.bytes(), 30);
        other.reset();
        co_await yield();
        co_await yield();
        EXPECT_TRUE(grow.granted);
        EXPECT_EQ(r.bytes(), 50);
        EXPECT_EQ(b.queued_bytes(), 50);
    }(b));
}

TEST(RequestBudgetGrow, TheOnlyReservationGrowsPastTheBoundAlone) {
    metrics_registry m;
    request_budget b(100, 500, m);
    run_until_done([](request_budget& b) -> asio::awaitable<void> {
        auto r = co_await b.acquire(80, nullptr);
        EXPECT_TRUE(co_await b.grow(r, 1000, nullptr));
        EXPECT_EQ(b.queued_bytes(), 1080);
        // Nothing else fits until it is given back.
        parked_call next;
        reservation next_r;
        asio::co_spawn(co_await asio::this_coro::executor,
                       [](request_budget& b, reservation& out,
                          parked_call& call) -> asio::awaitable<void> {
                           out = co_await b.acquire(1, &call);
                           call.done = true;
                       }(b, next_r, next),
                       asio::detached);
        co_await yield();
        EXPECT_FALSE(next.done);
        r.reset();
        co_await yield();
        co_await yield();
        EXPECT_TRUE(next_r);
    }(b));
}

TEST(RequestBudgetGrow, CancelEndsTheGrowAndLeavesTheReservationAsItWas) {
    metrics_registry m;
    request_budget b(100, 500, m);
    run_until_done([](request_budget& b) -> asio::awaitable<void> {
        auto other = co_await b.acquire(90, nullptr);
        auto r = co_await b.acquire(10, nullptr);
        parked_call grow;
        asio::co_spawn(co_await asio::this_coro::executor, grow_into(b, r, 50, grow),
                       asio::detached);
        co_await yield();
        b.cancel(&grow);
        co_await yield();
        co_await yield();
        EXPECT_TRUE(grow.done);
        EXPECT_FALSE(grow.granted);
        EXPECT_EQ(r.bytes(), 10);
        EXPECT_EQ(b.queued_bytes(), 100);
        EXPECT_EQ(b.waiting(), 0u);
    }(b));
}

TEST(BodyBudget, ReserveTakesThenGrowsOneReservation) {
    metrics_registry m;
    body_budget b(1000, 1s, m);
    run_until_done([](body_budget& b) -> asio::awaitable<void> {
        reservation r;
        EXPECT_TRUE(co_await b.reserve(r, 100, nullptr));
        EXPECT_EQ(r.bytes(), 100);
        EXPECT_TRUE(co_await b.reserve(r, 50, nullptr));  // already holds as much
        EXPECT_EQ(r.bytes(), 100);
        EXPECT_TRUE(co_await b.reserve(r, 400, nullptr));
        EXPECT_EQ(r.bytes(), 400);
        EXPECT_EQ(b.held_bytes(), 400);
    }(b));
    EXPECT_EQ(b.held_bytes(), 0);
}

TEST(BodyBudget, ReserveGivesUpAfterTheWaitBoundAndHoldsNothingMore) {
    metrics_registry m;
    body_budget b(1000, 50ms, m);
    run_until_done([](body_budget& b) -> asio::awaitable<void> {
        reservation full;
        EXPECT_TRUE(co_await b.reserve(full, 1000, nullptr));
        reservation r;
        const auto started = std::chrono::steady_clock::now();
        EXPECT_FALSE(co_await b.reserve(r, 10, &r));
        EXPECT_GE(std::chrono::steady_clock::now() - started, 50ms);
        EXPECT_FALSE(r);
        EXPECT_EQ(b.waiting(), 0u);
        EXPECT_EQ(b.held_bytes(), 1000);
    }(b));
}

TEST(BodyBudget, AGrowThatTimesOutKeepsWhatItHeld) {
    metrics_registry m;
    body_budget b(1000, 50ms, m);
    run_until_done([](body_budget& b) -> asio::awaitable<void> {
        reservation other;
        EXPECT_TRUE(co_await b.reserve(other, 600, nullptr));
        reservation r;
        EXPECT_TRUE(co_await b.reserve(r, 300, &r));
        EXPECT_FALSE(co_await b.reserve(r, 600, &r));
        EXPECT_EQ(r.bytes(), 300);
        EXPECT_EQ(b.held_bytes(), 900);
    }(b));
}

TEST(BodyBudget, AWaitingReserveIsGrantedWhenRoomIsGivenBack) {
    metrics_registry m;
    body_budget b(1000, 10s, m);
    run_until_done([](body_budget& b) -> asio::awaitable<void> {
        auto held = std::make_unique<reservation>();
        EXPECT_TRUE(co_await b.reserve(*held, 900, nullptr));
        reservation r;
        parked_call call;
        asio::co_spawn(co_await asio::this_coro::executor, reserve_into(b, r, 200, call),
                       asio::detached);
        co_await yield();
        EXPECT_FALSE(call.done);
        EXPECT_EQ(b.waiting(), 1u);
        held.reset();
        for (int i = 0; i < 4 && !call.done; ++i) {
            co_await yield();
        }
        EXPECT_TRUE(call.granted);
        EXPECT_EQ(r.bytes(), 200);
        // The deadline's timer was cancelled: a later wait of the same owner is not cut short
        // by it (the io_context would otherwise run for the whole 10 s wait bound).
    }(b));
}

TEST(BodyBudget, CancelOfAStoppingConnectionEndsItsWait) {
    metrics_registry m;
    body_budget b(100, 10s, m);
    run_until_done([](body_budget& b) -> asio::awaitable<void> {
        reservation full;
        EXPECT_TRUE(co_await b.reserve(full, 100, nullptr));
        reservation r;
        parked_call call;
        asio::co_spawn(co_await asio::this_coro::executor, reserve_into(b, r, 10, call),
                       asio::detached);
        co_await yield();
        b.cancel(&call);
        for (int i = 0; i < 4 && !call.done; ++i) {
            co_await yield();
        }
        EXPECT_TRUE(call.done);
        EXPECT_FALSE(call.granted);
        EXPECT_FALSE(r);
    }(b));
}

TEST(BodyBudget, MetricsHaveTheirOwnNamesApartFromKafkas) {
    metrics_registry m;
    body_budget b(1000, 1s, m);
    run_until_done([](body_budget& b, metrics_registry& m) -> asio::awaitable<void> {
        reservation r;
        EXPECT_TRUE(co_await b.reserve(r, 123, nullptr));
        EXPECT_EQ(m.get_gauge("sluice_http_request_body_bytes", "").value(), 123);
        EXPECT_EQ(m.get_gauge("sluice_http_requests_holding_body", "").value(), 1);
        EXPECT_EQ(m.get_gauge("sluice_kafka_queued_request_bytes", "").value(), 0);
    }(b, m));
}

}  // namespace
}  // namespace sluice::gateway
