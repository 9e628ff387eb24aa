// OffsetFetch: a group's committed positions (-1 where none). Up to v7 one group (null topics
// = every committed partition, v2+); v8+ several groups per request, and v9 checks the
// KIP-848 member epoch.
#include "backend/group/group_coordinator.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace bgroup = backend::group;

namespace {

template <typename Topics>
std::optional<std::vector<bgroup::fetch_topic>> to_fetch_topics(const std::optional<Topics>& in) {
    if (!in) {
        return std::nullopt;
    }
    std::vector<bgroup::fetch_topic> out;
    for (const auto& t : *in) {
        auto& ft = out.emplace_back();
        ft.name = t.name;
        for (auto p : t.partition_indexes) {
            ft.partitions.push_back(p.value);
        }
    }
    return out;
}

template <typename Partition>
Partition to_partition(const bgroup::fetched_partition& p, kafka::error_code group_error) {
    Partition out;
    out.partition_index = partition_id(p.partition);
    out.committed_offset = p.committed;
    out.committed_leader_epoch = p.leader_epoch;
    out.metadata = p.metadata;
    out.error_code = p.error ? to_kafka(p.error) : group_error;
    return out;
}

}  // namespace

boost::asio::awaitable<offset_fetch_handler::response> offset_fetch_handler::handle(
    request_context& ctx, request req) {
    const std::int16_t version = ctx.version();
    auto& groups = ctx.svc().groups;
    response resp;
    if (version >= 8) {
        std::vector<bgroup::offset_fetch_request> reqs;
        for (const auto& g : req.groups) {
            bgroup::offset_fetch_request r;
            r.group_id = g.group_id;
            r.member_id = g.member_id;
            r.member_epoch = g.member_epoch;
            r.topics = to_fetch_topics(g.topics);
            r.require_stable = req.require_stable;
            reqs.push_back(std::move(r));
        }
        for (const auto& res : groups.fetch_offsets(reqs)) {
            auto& out = resp.groups.emplace_back();
            out.group_id = res.group_id;
            out.error_code = to_kafka(res.error);
            for (const auto& t : res.topics) {
                auto& ot = out.topics.emplace_back();
                ot.name = t.name;
                for (const auto& p : t.partitions) {
                    ot.partitions.push_back(
                        to_partition<response::offset_fetch_response_partitions>(
                            p, kafka::error_code::none));
                }
            }
        }
        co_return resp;
    }
    bgroup::offset_fetch_request r;
    r.group_id = req.group_id;
    r.topics = to_fetch_topics(req.topics);
    if (version < 2 && !r.topics) {
        r.topics.emplace();  // null means "all" only from v2
    }
    r.require_stable = req.require_stable;
    auto res = std::move(groups.fetch_offsets({r}).front());
    const auto group_error = to_kafka(res.error);
    resp.error_code = group_error;
    if (res.error && r.topics) {
        // Before v2 there is no top-level error: every requested partition carries it.
        for (const auto& t : *r.topics) {
            auto& ot = resp.topics.emplace_back();
            ot.name = t.name;
            for (auto p : t.partitions) {
                bgroup::fetched_partition fp;
                fp.partition = p;
                ot.partitions.push_back(
                    to_partition<response::offset_fetch_response_partition>(fp, group_error));
            }
        }
        co_return resp;
    }
    for (const auto& t : res.topics) {
        auto& ot = resp.topics.emplace_back();
        ot.name = t.name;
        for (const auto& p : t.partitions) {
            ot.partitions.push_back(
                to_partition<response::offset_fetch_response_partition>(p, kafka::error_code::none));
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
