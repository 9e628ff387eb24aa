#include "protocol/kafka/classic_assignor.h"

#include <algorithm>

namespace sluice::protocol::kafka {
namespace {

std::vector<const assignor_member*> sorted(const std::vector<assignor_member>& members) {
    std::vector<const assignor_member*> out;
    for (const auto& m : members) {
        out.push_back(&m);
    }
    std::sort(out.begin(), out.end(),
              [](const auto* a, const auto* b) { return a->member_id < b->member_id; });
    return out;
}

bool subscribes(const assignor_member& m, const std::string& topic) {
    return std::find(m.topics.begin(), m.topics.end(), topic) != m.topics.end();
}

std::map<std::string, topic_assignment> empty_for(const std::vector<assignor_member>& members) {
    std::map<std::string, topic_assignment> out;
    for (const auto& m : members) {
        out[m.member_id];
    }
    return out;
}

}  // namespace

std::map<std::string, topic_assignment> assign_range(const std::vector<assignor_member>& members,
                                                     const partition_counts& counts) {
    auto out = empty_for(members);
    const auto order = sorted(members);
    for (const auto& [topic, partitions] : counts) {
        std::vector<const assignor_member*> subscribed;
        for (const auto* m : order) {
            if (subscribes(*m, topic)) {
                subscribed.push_back(m);
            }
        }
        if (subscribed.empty() || partitions <= 0) {
            continue;
        }
        const auto n = static_cast<std::int32_t>(subscribed.size());
        const std::int32_t per = partitions / n;
        const std::int32_t extra = partitions % n;
        for (std::int32_t i = 0; i < n; ++i) {
            const std::int32_t start = i * per + std::min(i, extra);
            const std::int32_t length = per + (i < extra ? 1 : 0);
            if (length == 0) {
                continue;  // a member with nothing of this topic does not list it
            }
            auto& list = out[subscribed[static_cast<std::size_t>(i)]->member_id][topic];
            for (std::int32_t p = start; p < start + length; ++p) {
                list.push_back(p);
            }
        }
    }
    return out;
}

std::map<std::string, topic_assignment> assign_roundrobin(
    const std::vector<assignor_member>& members, const partition_counts& counts) {
    auto out = empty_for(members);
    const auto order = sorted(members);
    if (order.empty()) {
        return out;
    }
    std::size_t next = 0;
    for (const auto& [topic, partitions] : counts) {
        for (std::int32_t p = 0; p < partitions; ++p) {
            // The next member, circularly, that subscribes to this topic.
            for (std::size_t tried = 0; tried < order.size(); ++tried) {
                const auto* m = order[next % order.size()];
                ++next;
                if (subscribes(*m, topic)) {
                    out[m->member_id][topic].push_back(p);
                    break;
                }
            }
        }
    }
    return out;
}

}  // namespace sluice::protocol::kafka
