// OffsetCommit: store a group's positions in __consumer_offsets. Answered once the records
// are durable. Commits from a stale generation (classic) or member epoch (KIP-848) are
// refused as Kafka does; v0 (no generation) commits for groups without members.
#include "backend/api/groups.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace bgroup = backend::api;

/// READ on the group (access 0; else every partition fails), then READ on each topic (1 + its
/// index), asked only when the group was allowed.
void offset_commit_handler::declare(std::int16_t, const request& req, access_list& out) {
    const auto group = out.add(auth::acl_operation::read, auth::resource_type::group,
                               req.group_id);
    for (const auto& t : req.topics) {
        out.add(auth::acl_operation::read, auth::resource_type::topic, t.name);
        out.only_if(group);
    }
}

boost::asio::awaitable<offset_commit_handler::response> offset_commit_handler::handle(
    request_context& ctx, request req) {
    bgroup::offset_commit_request r;
    r.group_id = group_id(std::move(req.group_id));
    r.generation_id_or_member_epoch = req.generation_id_or_member_epoch;
    r.member_id = std::move(req.member_id);
    r.group_instance_id = std::move(req.group_instance_id);
    r.retention_time_ms = req.retention_time_ms;
    r.api_version = ctx.version();
    const bool group_denied = ctx.verdicts().denied(0);
    response resp;
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        auto& t = req.topics[ti];
        if (group_denied || ctx.verdicts().denied(1 + ti)) {
            auto& out = resp.topics.emplace_back();
            out.name = t.name;
            for (const auto& p : t.partitions) {
                out.partitions.push_back(
                    {p.partition_index,
                     group_denied ? kafka::error_code::group_authorization_failed
                                  : kafka::error_code::topic_authorization_failed,
                     {}});
            }
            continue;
        }
        auto& topic = r.topics.emplace_back();
        topic.topic = topic_name(std::move(t.name));
        for (auto& p : t.partitions) {
            topic.partitions.push_back({p.partition_index, p.committed_offset,
                                        p.committed_leader_epoch,
                                        std::move(p.committed_metadata)});
        }
    }
    if (group_denied || r.topics.empty()) {
        co_return resp;
    }
    auto res = co_await ctx.svc().groups.commit_offsets(std::move(r));

    for (auto& t : res.topics) {
        auto& out = resp.topics.emplace_back();
        out.name = std::move(t.topic.value);
        for (const auto& p : t.partitions) {
            out.partitions.push_back({p.partition, to_kafka(p.error), {}});
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
