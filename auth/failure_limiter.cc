#include "auth/failure_limiter.h"

#include <algorithm>

namespace sluice::auth {

std::chrono::milliseconds failure_limiter::record_failure(const std::string& address,
                                                          clock::time_point now) {
    std::lock_guard lock(mutex_);
    auto it = by_address_.find(address);
    if (it != by_address_.end() && now - it->second.last > options_.forget_after) {
        it->second.failures = 0;
    }
    if (it == by_address_.end()) {
        if (by_address_.size() >= options_.max_addresses) {
            prune(now);
        }
        it = by_address_.emplace(address, entry{}).first;
    }
    entry& e = it->second;
    ++e.failures;
    e.last = now;
    const int over = e.failures - options_.free_failures;
    if (over <= 0) {
        return std::chrono::milliseconds(0);
    }
    return std::min(options_.max_delay, options_.step * over);
}

void failure_limiter::record_success(const std::string& address) {
    std::lock_guard lock(mutex_);
    by_address_.erase(address);
}

void failure_limiter::prune(clock::time_point now) {
    std::erase_if(by_address_, [&](const auto& kv) {
        return now - kv.second.last > options_.forget_after;
    });
    if (by_address_.size() < options_.max_addresses) {
        return;
    }
    // Still full of recent failures: drop the oldest entry.
    auto oldest = std::min_element(by_address_.begin(), by_address_.end(),
                                   [](const auto& a, const auto& b) {
                                       return a.second.last < b.second.last;
                                   });
    by_address_.erase(oldest);
}

}  // namespace sluice::auth
