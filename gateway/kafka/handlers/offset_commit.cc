// OffsetCommit: store a group's positions in __consumer_offsets. Answered once the records
// are durable. Commits from a stale generation (classic) or member epoch (KIP-848) are
// refused as Kafka does; v0 (no generation) commits for groups without members.
#include "backend/api/groups.h"
#include "gateway/kafka/authz.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace bgroup = backend::api;

boost::asio::awaitable<offset_commit_handler::response> offset_commit_handler::handle(
    request_context& ctx, request req) {
    bgroup::offset_commit_request r;
    r.group_id = group_id(std::move(req.group_id));
    r.generation_id_or_member_epoch = req.generation_id_or_member_epoch;
    r.member_id = std::move(req.member_id);
    r.group_instance_id = std::move(req.group_instance_id);
    r.retention_time_ms = req.retention_time_ms;
    r.api_version = ctx.version();
    // READ on the group (else every partition fails), READ on each topic.
    const bool group_denied = !authorize(ctx, auth::acl_operation::read,
                                         auth::resource_type::group, r.group_id.value);
    response resp;
    for (auto& t : req.topics) {
        if (group_denied || !authorize(ctx, auth::acl_operation::read,
                                       auth::resource_type::topic, t.name)) {
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
