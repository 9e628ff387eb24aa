// Keyed timeouts of the group coordinator (owned by backend/group): session expirations, the
// join and sync barriers' deadlines, KIP-848 rebalance timeouts. Scheduling a key that is
// already scheduled replaces it, as Kafka's coordinator timer does.
//
// Lifecycle: each group entry owns one, for that group's timeouts; the coordinator's ticker
// learns its earliest deadline. Concurrency: not thread-safe; used under the group entry's
// lock. Time is the coordinator's monotonic milliseconds, so tests drive it with a manual
// clock: run_due(now) fires what is due, in deadline order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace sluice::backend::group {

class timer_queue {
public:
    /// Runs `fn` at `deadline_ms` unless cancelled or rescheduled first.
    void schedule(const std::string& key, std::int64_t deadline_ms, std::function<void()> fn) {
        cancel(key);
        const std::uint64_t seq = ++seq_;
        by_time_.emplace(std::make_pair(deadline_ms, seq), entry{key, std::move(fn)});
        by_key_[key] = {deadline_ms, seq};
    }
    void cancel(const std::string& key) {
        auto it = by_key_.find(key);
        if (it != by_key_.end()) {
            by_time_.erase(it->second);
            by_key_.erase(it);
        }
    }
    bool scheduled(const std::string& key) const { return by_key_.contains(key); }
    std::optional<std::int64_t> deadline(const std::string& key) const {
        auto it = by_key_.find(key);
        return it == by_key_.end() ? std::nullopt : std::optional(it->second.first);
    }
    std::optional<std::int64_t> next_deadline() const {
        return by_time_.empty() ? std::nullopt : std::optional(by_time_.begin()->first.first);
    }
    /// Fires every timer due at `now_ms`; a timer may schedule or cancel others (those due
    /// by then fire in the same call). Returns how many fired.
    int run_due(std::int64_t now_ms) {
        int fired = 0;
        while (!by_time_.empty() && by_time_.begin()->first.first <= now_ms) {
            auto node = by_time_.extract(by_time_.begin());
            by_key_.erase(node.mapped().key);
            node.mapped().fn();
            ++fired;
        }
        return fired;
    }
    std::size_t size() const { return by_key_.size(); }
    void clear() {
        by_time_.clear();
        by_key_.clear();
    }

private:
    struct entry {
        std::string key;
        std::function<void()> fn;
    };
    std::map<std::pair<std::int64_t, std::uint64_t>, entry> by_time_;
    std::unordered_map<std::string, std::pair<std::int64_t, std::uint64_t>> by_key_;
    std::uint64_t seq_ = 0;
};

}  // namespace sluice::backend::group
