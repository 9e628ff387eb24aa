// The per-address failure limiter, on a manual clock.
#include <gtest/gtest.h>

#include "auth/failure_limiter.h"

namespace sluice::auth {
namespace {

using namespace std::chrono_literals;
using clock_type = failure_limiter::clock;

failure_limiter::options small_options() {
    failure_limiter::options o;
    o.free_failures = 2;
    o.step = 100ms;
    o.max_delay = 300ms;
    o.forget_after = 10s;
    o.max_addresses = 2;
    return o;
}

TEST(FailureLimiter, DelayGrowsAfterTheFreeFailuresUpToTheMaximum) {
    failure_limiter limiter(small_options());
    const auto t = clock_type::time_point{} + 1h;

    EXPECT_EQ(limiter.record_failure("10.0.0.1", t), 0ms);
    EXPECT_EQ(limiter.record_failure("10.0.0.1", t), 0ms);
    EXPECT_EQ(limiter.record_failure("10.0.0.1", t), 100ms);
    EXPECT_EQ(limiter.record_failure("10.0.0.1", t), 200ms);
    EXPECT_EQ(limiter.record_failure("10.0.0.1", t), 300ms);
    EXPECT_EQ(limiter.record_failure("10.0.0.1", t), 300ms);
}

TEST(FailureLimiter, AddressesAreCountedApart) {
    failure_limiter limiter(small_options());
    const auto t = clock_type::time_point{} + 1h;
    for (int i = 0; i < 4; ++i) {
        limiter.record_failure("10.0.0.1", t);
    }

    EXPECT_EQ(limiter.record_failure("10.0.0.2", t), 0ms);
}

TEST(FailureLimiter, FailuresAreForgottenAfterAQuietPeriod) {
    failure_limiter limiter(small_options());
    const auto t = clock_type::time_point{} + 1h;
    for (int i = 0; i < 4; ++i) {
        limiter.record_failure("10.0.0.1", t);
    }

    EXPECT_EQ(limiter.record_failure("10.0.0.1", t + 11s), 0ms);
}

TEST(FailureLimiter, SuccessClearsTheCount) {
    failure_limiter limiter(small_options());
    const auto t = clock_type::time_point{} + 1h;
    for (int i = 0; i < 4; ++i) {
        limiter.record_failure("10.0.0.1", t);
    }
    limiter.record_success("10.0.0.1");

    EXPECT_EQ(limiter.record_failure("10.0.0.1", t), 0ms);
}

TEST(FailureLimiter, FullTableDropsTheOldestAddress) {
    failure_limiter limiter(small_options());
    const auto t = clock_type::time_point{} + 1h;
    for (int i = 0; i < 3; ++i) {
        limiter.record_failure("old", t);
    }
    limiter.record_failure("b", t + 1s);
    limiter.record_failure("c", t + 2s);  // the table holds two: "old" goes

    EXPECT_EQ(limiter.record_failure("old", t + 3s), 0ms);
}

}  // namespace
}  // namespace sluice::auth
