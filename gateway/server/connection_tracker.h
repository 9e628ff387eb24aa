// The gate every connection passes: knows every live connection (of any front) so that
// shutdown can ask them all to stop, and counts them for /metrics.
// Thread-safe: connections register and leave from their own io threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "gateway/server/metrics.h"

namespace sluice::gateway {

class connection_tracker {
public:
    explicit connection_tracker(gauge& open_connections) : open_(open_connections) {}

    /// Registers a connection; `stop` must be callable from any thread. Returns its id.
    std::uint64_t enter(std::function<void()> stop);
    void leave(std::uint64_t id);
    /// Calls every registered stop function (they must not call back into the tracker
    /// synchronously).
    void stop_all();
    std::size_t size() const;

private:
    mutable std::mutex mu_;
    std::map<std::uint64_t, std::function<void()>> live_;
    std::uint64_t next_id_ = 1;
    gauge& open_;
};

}  // namespace sluice::gateway
