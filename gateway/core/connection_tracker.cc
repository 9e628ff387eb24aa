#include "gateway/core/connection_tracker.h"

#include <vector>

namespace sluice::gateway {

std::uint64_t connection_tracker::enter(stop_function stop) {
    std::lock_guard lock(mu_);
    const std::uint64_t id = next_id_++;
    live_.emplace(id, std::move(stop));
    open_.add(1);
    return id;
}

void connection_tracker::leave(std::uint64_t id) {
    std::lock_guard lock(mu_);
    if (live_.erase(id) > 0) {
        open_.add(-1);
    }
}

void connection_tracker::stop_all(stop_mode mode) {
    std::vector<stop_function> stops;
    {
        std::lock_guard lock(mu_);
        for (auto& [id, stop] : live_) {
            stops.push_back(stop);
        }
    }
    for (auto& s : stops) {
        s(mode);
    }
}

std::size_t connection_tracker::size() const {
    std::lock_guard lock(mu_);
    return live_.size();
}

}  // namespace sluice::gateway
