#include "gateway/core/busy_time.h"

namespace sluice::gateway::detail {
namespace {

// The metered stretch running on this thread, innermost first.
struct stretch {
    busy_clock* clock;
    std::chrono::steady_clock::time_point start;
    std::chrono::nanoseconds nested{0};  // time of other requests' stretches inside this one
    stretch* outer;
};

thread_local stretch* running = nullptr;

}  // namespace

void run_metered(busy_clock* clock, void (*call)(void*), void* f) {
    for (stretch* s = running; s != nullptr; s = s->outer) {
        if (s->clock == clock) {
            call(f);  // already being timed further out
            return;
        }
    }
    stretch me{clock, std::chrono::steady_clock::now(), std::chrono::nanoseconds(0), running};
    running = &me;
    struct finish {
        stretch& me;
        ~finish() {
            const std::chrono::nanoseconds took = std::chrono::steady_clock::now() - me.start;
            me.clock->add(took - me.nested);
            running = me.outer;
            if (me.outer != nullptr) {
                me.outer->nested += took;
            }
        }
    } done{me};
    call(f);
}

}  // namespace sluice::gateway::detail

namespace sluice::gateway {

std::chrono::nanoseconds busy_clock::total() const {
    std::chrono::nanoseconds t(ns_.load(std::memory_order_relaxed));
    for (const detail::stretch* s = detail::running; s != nullptr; s = s->outer) {
        if (s->clock == this) {
            t += std::chrono::steady_clock::now() - s->start - s->nested;
            break;
        }
    }
    return t;
}

}  // namespace sluice::gateway
