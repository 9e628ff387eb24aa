// The wall clock of the native backend (owned by backend/native): milliseconds since the Unix
// epoch, for LogAppendTime stamps, segment roll times and producer-state expiry.
#pragma once

#include <chrono>
#include <cstdint>

namespace sluice::backend::native {

inline std::int64_t wall_clock_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace sluice::backend::native
