// When the group coordinator's timeouts are due (owned by backend/group): the earliest deadline
// of each group's own timer_queue, the next offsets-retention pass, and the one steady_timer
// that wakes the coordinator for the earliest of them.
//
// Lifecycle: owned by the group coordinator. start() gives it the executor its timer runs on
// (without one, nothing wakes up by itself: tests call the coordinator's run_timers() with a
// manual clock); stop() cancels the timer and ignores every later deadline.
//
// Concurrency: thread-safe; one mutex, a leaf (taken under a group's lock, never held while
// calling out). Deadlines are the coordinator's monotonic milliseconds. The timer is armed and
// cancelled by handlers posted to its executor, which must not run handlers concurrently (an
// io_context run by one thread, or a strand). The timer and the posted handlers share their
// state, so a handler that runs after the coordinator is gone touches nothing of it.
//
// Invariant: while started, the timer waits for the earliest deadline known, or for an
// earlier one that has since been replaced (it then finds nothing due and re-arms). A group's
// deadline here may be earlier than its next timeout (the registry does not report deadlines
// that move later); the coordinator then visits the group, finds nothing due, and reports the
// real one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

namespace sluice::backend::group {

class ticker {
  public:
    struct due {
        std::vector<std::string> groups;  // forgotten until set_group() tells them again
        bool retention = false;           // the retention pass (forgotten as well)
    };

    ticker();
    ~ticker();
    ticker(const ticker&) = delete;
    ticker& operator=(const ticker&) = delete;

    /// Wakes up on `ex` for every due deadline and calls `on_due` there (without a lock).
    void start(boost::asio::any_io_executor ex, std::function<void()> on_due);
    void stop();

    /// The earliest deadline of a group's timeouts (nullopt: none).
    void set_group(const std::string& group_id, std::optional<std::int64_t> at);
    void set_retention(std::optional<std::int64_t> at);

    /// What is due at `now_ms`, removed from the schedule.
    due take_due(std::int64_t now_ms);
    /// Arms the timer for the earliest deadline left (after take_due's work is done).
    void rearm();

  private:
    struct state;
    void arm_locked(std::int64_t at);
    std::optional<std::int64_t> next_locked() const;
    static void on_wake(const std::shared_ptr<state>& s, const boost::system::error_code& ec);

    std::shared_ptr<state> state_;
};

}  // namespace sluice::backend::group
