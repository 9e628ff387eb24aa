// Slows down password guessing: counts failed authentications per client address and says how
// long to wait before answering the next failure. Owned by auth/; the Kafka front asks it on
// every failed SaslAuthenticate.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sluice::auth {

/// Per-address failure counts with a delay that grows with each failure past `free_failures`
/// (by `step`, up to `max_delay`), forgotten `forget_after` after an address's last failure.
/// The table keeps at most `max_addresses` entries (the oldest go first when it is full).
/// Created once per process; thread-safe. The clock is passed in, so tests need no sleeps.
class failure_limiter {
public:
    using clock = std::chrono::steady_clock;

    struct options {
        int free_failures = 3;
        std::chrono::milliseconds step{200};
        std::chrono::milliseconds max_delay{2000};
        std::chrono::milliseconds forget_after{60000};
        std::size_t max_addresses = 10000;
    };

    failure_limiter() : failure_limiter(options{}) {}
    explicit failure_limiter(options o) : options_(o) {}

    /// Records one failure from `address` at `now`; returns the delay to apply before answering.
    std::chrono::milliseconds record_failure(const std::string& address, clock::time_point now);
    /// A success from `address` clears its count.
    void record_success(const std::string& address);

private:
    struct entry {
        int failures = 0;
        clock::time_point last;
    };
    void prune(clock::time_point now);

    options options_;
    std::mutex mutex_;
    std::unordered_map<std::string, entry> by_address_;
};

}  // namespace sluice::auth
