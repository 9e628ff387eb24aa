#include "backend/group/ticker.h"

#include <chrono>

#include <boost/asio/post.hpp>

namespace sluice::backend::group {
namespace asio = boost::asio;

struct ticker::state {
    std::mutex mu;
    // Guarded by mu.
    std::set<std::pair<std::int64_t, std::string>> by_time;
    std::unordered_map<std::string, std::int64_t> by_group;
    std::int64_t retention_at = -1;
    std::int64_t armed_at = -1;  // the deadline the timer waits for; -1 when it waits for none
    bool stopped = false;
    std::optional<asio::any_io_executor> ex;
    std::function<void()> on_due;
    // Used on `ex` only.
    std::unique_ptr<asio::steady_timer> timer;
};

ticker::ticker() : state_(std::make_shared<state>()) {}

ticker::~ticker() {
    stop();
}

void ticker::start(asio::any_io_executor ex, std::function<void()> on_due) {
    std::lock_guard lock(state_->mu);
    if (state_->stopped) {
        return;
    }
    state_->ex = ex;
    state_->on_due = std::move(on_due);
    state_->timer = std::make_unique<asio::steady_timer>(ex);
    state_->armed_at = -1;
    if (auto next = next_locked()) {
        arm_locked(*next);
    }
}

void ticker::stop() {
    std::lock_guard lock(state_->mu);
    if (state_->stopped) {
        return;
    }
    state_->stopped = true;
    state_->by_time.clear();
    state_->by_group.clear();
    state_->retention_at = -1;
    if (state_->ex) {
        // The timer belongs to its executor: cancel and release it there, so that nothing of
        // it is left to outlive the executor's io_context.
        asio::post(*state_->ex, [s = state_] {
            s->timer->cancel();
            s->timer.reset();
        });
    }
}

void ticker::set_group(const std::string& group_id, std::optional<std::int64_t> at) {
    std::lock_guard lock(state_->mu);
    if (state_->stopped) {
        return;
    }
    if (auto it = state_->by_group.find(group_id); it != state_->by_group.end()) {
        state_->by_time.erase({it->second, group_id});
        state_->by_group.erase(it);
    }
    if (!at) {
        return;
    }
    state_->by_time.emplace(*at, group_id);
    state_->by_group.emplace(group_id, *at);
    if (state_->armed_at < 0 || *at < state_->armed_at) {
        arm_locked(*at);
    }
}

void ticker::set_retention(std::optional<std::int64_t> at) {
    std::lock_guard lock(state_->mu);
    if (state_->stopped) {
        return;
    }
    state_->retention_at = at.value_or(-1);
    if (at && (state_->armed_at < 0 || *at < state_->armed_at)) {
        arm_locked(*at);
    }
}

ticker::due ticker::take_due(std::int64_t now_ms) {
    due out;
    std::lock_guard lock(state_->mu);
    auto& by_time = state_->by_time;
    while (!by_time.empty() && by_time.begin()->first <= now_ms) {
        auto node = by_time.extract(by_time.begin());
        state_->by_group.erase(node.value().second);
        out.groups.push_back(std::move(node.value().second));
    }
    if (state_->retention_at >= 0 && state_->retention_at <= now_ms) {
        state_->retention_at = -1;
        out.retention = true;
    }
    return out;
}

void ticker::rearm() {
    std::lock_guard lock(state_->mu);
    if (state_->stopped) {
        return;
    }
    auto next = next_locked();
    if (next && (state_->armed_at < 0 || *next < state_->armed_at)) {
        arm_locked(*next);
    }
}

std::optional<std::int64_t> ticker::next_locked() const {
    std::optional<std::int64_t> next;
    if (!state_->by_time.empty()) {
        next = state_->by_time.begin()->first;
    }
    if (state_->retention_at >= 0 && (!next || state_->retention_at < *next)) {
        next = state_->retention_at;
    }
    return next;
}

void ticker::arm_locked(std::int64_t at) {
    state_->armed_at = at;
    if (!state_->ex) {
        return;  // not started: start() arms for the earliest deadline
    }
    asio::post(*state_->ex, [s = state_, at] {
        {
            std::lock_guard lock(s->mu);
            if (s->stopped || s->armed_at != at) {
                return;  // stopped, or another arm for an earlier deadline follows
            }
        }
        // Re-arming cancels the wait for a later deadline (its handler sees
        // operation_aborted).
        s->timer->expires_at(std::chrono::steady_clock::time_point(std::chrono::milliseconds(at)));
        s->timer->async_wait([s](const boost::system::error_code& ec) { on_wake(s, ec); });
    });
}

void ticker::on_wake(const std::shared_ptr<state>& s, const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) {
        return;  // re-armed for an earlier deadline, or stopped
    }
    std::function<void()> on_due;
    {
        std::lock_guard lock(s->mu);
        if (s->stopped) {
            return;
        }
        s->armed_at = -1;
        on_due = s->on_due;
    }
    on_due();
}

}  // namespace sluice::backend::group
