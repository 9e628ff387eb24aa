// The io-thread time one request costs, for the request_percentage client quota (Kafka's
// request quota: time on the broker's threads, not time spent waiting): a request's coroutine
// is run on a metered_executor, which times every stretch the coroutine runs on an io thread
// (its start and each resumption) and adds it to the request's busy_clock. Time suspended (a
// fetch's long poll, an fsync wait, a queue's long poll) is not counted.
//
// Only requests of a principal with a request quota are metered; the others run as before.
// Concurrency: a busy_clock may be added to from any thread; metered_executor is as
// thread-safe as the executor it wraps.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <type_traits>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/require.hpp>

namespace sluice::gateway {

/// The io-thread time a request used so far.
class busy_clock {
public:
    void add(std::chrono::nanoseconds d) { ns_.fetch_add(d.count(), std::memory_order_relaxed); }
    /// The time of the stretches that ended, plus the one running now on this thread if it is
    /// this clock's (a request reads its own clock while it runs).
    std::chrono::nanoseconds total() const;

private:
    std::atomic<std::int64_t> ns_{0};
};

namespace detail {

/// Runs f, adding the time it takes to `clock`. A stretch of another metered request that
/// runs inline inside it (a dispatch) is counted there and not here; a stretch of the same
/// request nested in itself is counted once.
void run_metered(busy_clock* clock, void (*call)(void*), void* f);

template <typename F>
struct metered_call {
    std::shared_ptr<busy_clock> clock;
    F f;

    void operator()() {
        run_metered(clock.get(), [](void* p) { (*static_cast<F*>(p))(); }, &f);
    }
};

}  // namespace detail

/// An executor that runs everything on `inner`, timing each function it runs into `clock`.
/// A coroutine spawned on it (co_spawn) resumes through it after every suspension, so its
/// clock holds the coroutine's own io-thread time.
class metered_executor {
public:
    using inner_executor = boost::asio::any_io_executor;

    metered_executor(inner_executor inner, std::shared_ptr<busy_clock> clock)
        : inner_(std::move(inner)), clock_(std::move(clock)) {}

    template <typename F>
    void execute(F&& f) const {
        inner_.execute(detail::metered_call<std::decay_t<F>>{clock_, std::forward<F>(f)});
    }

    template <typename Property>
        requires boost::asio::can_query<const inner_executor&, Property>::value
    decltype(auto) query(const Property& p) const {
        return boost::asio::query(inner_, p);
    }

    template <typename Property>
        requires boost::asio::can_require<const inner_executor&, Property>::value
    metered_executor require(const Property& p) const {
        return metered_executor(boost::asio::require(inner_, p), clock_);
    }

    template <typename Property>
        requires boost::asio::can_prefer<const inner_executor&, Property>::value
    metered_executor prefer(const Property& p) const {
        return metered_executor(boost::asio::prefer(inner_, p), clock_);
    }

    friend bool operator==(const metered_executor& a, const metered_executor& b) noexcept {
        return a.clock_ == b.clock_ && a.inner_ == b.inner_;
    }
    friend bool operator!=(const metered_executor& a, const metered_executor& b) noexcept {
        return !(a == b);
    }

private:
    inner_executor inner_;
    std::shared_ptr<busy_clock> clock_;
};

}  // namespace sluice::gateway
