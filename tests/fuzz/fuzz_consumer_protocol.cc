// Fuzzes the consumer protocol's member metadata, which every classic group member sends and
// the group leader (a Kafka client, or sluice's own REST/WebSocket members) reads: the
// subscription and the assignment, at every version. What decodes must re-encode and decode
// to the same value, and the assignors must give each partition of a subscribed topic to
// exactly one subscribed member, whatever the subscriptions hold.
//
// The first byte picks what the rest is: even, a subscription; odd, an assignment.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "protocol/kafka/classic_assignor.h"
#include "protocol/kafka/consumer_protocol.h"

using namespace sluice::protocol;
using namespace sluice::protocol::kafka;

namespace {

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

bool same(const consumer_subscription& a, const consumer_subscription& b) {
    return a.topics == b.topics && a.user_data == b.user_data &&
           (a.version < 1 || a.owned_partitions == b.owned_partitions) &&
           (a.version < 2 || a.generation == b.generation) && (a.version < 3 || a.rack == b.rack);
}

/// Every partition of every topic some member subscribes to goes to exactly one member that
/// subscribes to it; nothing else is assigned.
void check_assignment(const std::vector<assignor_member>& members, const partition_counts& counts,
                      const std::map<std::string, topic_assignment>& answer) {
    std::map<std::string, std::set<std::string>> subscribed;
    for (const auto& m : members) {
        for (const auto& t : m.topics) {
            subscribed[t].insert(m.member_id);
        }
    }
    std::map<std::string, std::multiset<std::int32_t>> given;
    for (const auto& [member, topics] : answer) {
        for (const auto& [topic, parts] : topics) {
            check(subscribed[topic].contains(member));
            given[topic].insert(parts.begin(), parts.end());
        }
    }
    for (const auto& [topic, n] : counts) {
        if (subscribed[topic].empty()) {
            continue;
        }
        const auto& g = given[topic];
        check(g.size() == static_cast<std::size_t>(n));
        for (std::int32_t p = 0; p < n; ++p) {
            check(g.count(p) == 1);
        }
    }
}

void assign(const consumer_subscription& s) {
    // Two members: the decoded subscription and a second one on the first half of its
    // topics; the topics exist with a partition count from their names.
    std::vector<assignor_member> members{{"m-1", s.topics}, {"m-0", {}}};
    for (std::size_t i = 0; i < s.topics.size() / 2; ++i) {
        members[1].topics.push_back(s.topics[i]);
    }
    partition_counts counts;
    for (const auto& t : s.topics) {
        counts[t] = static_cast<std::int32_t>(t.size() % 7);
    }
    check_assignment(members, counts, assign_range(members, counts));
    check_assignment(members, counts, assign_roundrobin(members, counts));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 64 * 1024) {
        return 0;
    }
    const bytes_view input(reinterpret_cast<const std::byte*>(data + 1), size - 1);
    if (data[0] % 2 == 0) {
        auto s = decode_subscription(input);
        if (!s) {
            return 0;
        }
        const auto again = encode_subscription(*s);
        auto back = decode_subscription(bytes_view(again.data(), again.size()));
        check(back.has_value() && back->version == s->version && same(*s, *back));
        if (s->topics.size() <= 64) {
            assign(*s);
        }
    } else {
        auto a = decode_assignment(input);
        if (!a) {
            return 0;
        }
        const auto again = encode_assignment(*a);
        auto back = decode_assignment(bytes_view(again.data(), again.size()));
        check(back.has_value() && back->partitions == a->partitions &&
              back->user_data == a->user_data);
    }
    return 0;
}
