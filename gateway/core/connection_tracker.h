// The gate every connection passes: knows every live connection (of any front) so that
// shutdown can ask them all to finish and later cut the rest, and counts them for /metrics.
// Thread-safe: connections register and leave from their own io threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "gateway/core/metrics.h"

namespace sluice::gateway {

/// The two steps of shutdown, as a connection sees them.
enum class stop_mode {
    finish,  // step one: stop taking new work, complete what was read, then close
    cut,     // step two, after the grace period: close now, abandoning what is in flight
};

class connection_tracker {
public:
    /// Asks one connection to stop; callable from any thread, must not block.
    using stop_function = std::function<void(stop_mode)>;

    explicit connection_tracker(gauge& open_connections) : open_(open_connections) {}

    /// Registers a connection. Returns its id (unique for the life of the tracker).
    std::uint64_t enter(stop_function stop);
    void leave(std::uint64_t id);
    /// Calls every registered stop function with `mode` (they must not call back into the
    /// tracker synchronously).
    void stop_all(stop_mode mode);
    std::size_t size() const;

private:
    mutable std::mutex mu_;
    std::map<std::uint64_t, stop_function> live_;
    std::uint64_t next_id_ = 1;
    gauge& open_;
};

}  // namespace sluice::gateway
