#include "backend/group/assignor.h"

#include <algorithm>
#include <utility>

namespace sluice::backend::group {
namespace {

using partition_ref = std::pair<uuid, std::int32_t>;

}  // namespace

bool known_assignor(const std::string& name) { return name == "uniform" || name == "range"; }

std::map<std::string, topic_partitions> assign_uniform(const std::vector<assignor_member>& members,
                                                       const topic_sizes& topics) {
    std::map<std::string, topic_partitions> out;
    std::map<std::string, std::size_t> load;
    for (const auto& m : members) {
        out[m.member_id];
        load[m.member_id] = 0;
    }
    // 1. Stickiness: keep previous partitions that are still valid, each at most once.
    std::set<partition_ref> taken;
    for (const auto& m : members) {
        for (const auto& [topic, parts] : m.current) {
            auto size = topics.find(topic);
            if (size == topics.end() || !m.topics.contains(topic)) {
                continue;
            }
            for (std::int32_t p : parts) {
                if (p < size->second && taken.insert({topic, p}).second) {
                    out[m.member_id][topic].insert(p);
                    ++load[m.member_id];
                }
            }
        }
    }
    // 2. Give each free partition to the least loaded member subscribed to its topic.
    auto least_loaded = [&](const uuid& topic) -> const assignor_member* {
        const assignor_member* best = nullptr;
        for (const auto& m : members) {
            if (m.topics.contains(topic) && (best == nullptr || load[m.member_id] < load[best->member_id])) {
                best = &m;
            }
        }
        return best;
    };
    for (const auto& [topic, size] : topics) {
        for (std::int32_t p = 0; p < size; ++p) {
            if (taken.contains({topic, p})) {
                continue;
            }
            if (const auto* m = least_loaded(topic)) {
                out[m->member_id][topic].insert(p);
                ++load[m->member_id];
                taken.insert({topic, p});
            }
        }
    }
    // 3. Balance: move partitions from a member to another subscribed member with at least two
    // fewer, until no such move exists. Each move lowers the sum of squared loads, so this ends.
    bool moved = true;
    while (moved) {
        moved = false;
        for (auto& [from_id, owned] : out) {
            for (auto& [topic, parts] : owned) {
                for (auto it = parts.begin(); it != parts.end();) {
                    const assignor_member* to = least_loaded(topic);
                    if (to == nullptr || load[to->member_id] + 1 >= load[from_id]) {
                        ++it;
                        continue;
                    }
                    out[to->member_id][topic].insert(*it);
                    ++load[to->member_id];
                    --load[from_id];
                    it = parts.erase(it);
                    moved = true;
                }
            }
        }
    }
    for (auto& [_, owned] : out) {
        std::erase_if(owned, [](const auto& kv) { return kv.second.empty(); });
    }
    return out;
}

std::map<std::string, topic_partitions> assign_range(const std::vector<assignor_member>& members,
                                                     const topic_sizes& topics) {
    std::map<std::string, topic_partitions> out;
    for (const auto& m : members) {
        out[m.member_id];
    }
    for (const auto& [topic, size] : topics) {
        std::vector<std::string> subscribed;
        for (const auto& m : members) {
            if (m.topics.contains(topic)) {
                subscribed.push_back(m.member_id);
            }
        }
        if (subscribed.empty()) {
            continue;
        }
        std::sort(subscribed.begin(), subscribed.end());
        const auto n = static_cast<std::int32_t>(subscribed.size());
        const std::int32_t base = size / n;
        const std::int32_t extra = size % n;
        std::int32_t next = 0;
        for (std::int32_t i = 0; i < n; ++i) {
            const std::int32_t take = base + (i < extra ? 1 : 0);
            for (std::int32_t k = 0; k < take; ++k) {
                out[subscribed[static_cast<std::size_t>(i)]][topic].insert(next++);
            }
        }
    }
    return out;
}

}  // namespace sluice::backend::group
