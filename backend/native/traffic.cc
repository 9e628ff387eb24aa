#include "backend/native/traffic.h"

#include <mutex>

namespace sluice::backend::native {

traffic::counters& traffic::of(const std::string& topic, partition_id partition) {
    const auto key = std::make_pair(topic, partition.value);
    {
        std::shared_lock lock(mu_);
        auto it = by_partition_.find(key);
        if (it != by_partition_.end()) {
            return *it->second;
        }
    }
    std::unique_lock lock(mu_);
    auto& slot = by_partition_[key];
    if (!slot) {
        slot = std::make_unique<counters>();
    }
    return *slot;
}

const traffic::counters* traffic::find(const std::string& topic, partition_id partition) const {
    std::shared_lock lock(mu_);
    auto it = by_partition_.find(std::make_pair(topic, partition.value));
    return it == by_partition_.end() ? nullptr : it->second.get();
}

}  // namespace sluice::backend::native
