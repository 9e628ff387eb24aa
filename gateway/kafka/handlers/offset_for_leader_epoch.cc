// OffsetForLeaderEpoch: the end offset of a leader epoch. This broker has led every partition
// since its creation in epoch 0, so epoch 0 ends at the log end offset. Kafka's check:
// CLUSTER_ACTION on the cluster (a follower) covers every topic, else DESCRIBE on each topic
// (KIP-320 consumers).
#include "backend/api/records.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

constexpr std::int32_t current_leader_epoch = 0;

/// CLUSTER_ACTION on the cluster, quietly (access 0: a follower may ask of any topic), else
/// DESCRIBE on each topic (1 + its index).
void offset_for_leader_epoch_handler::declare(std::int16_t, const request& req,
                                              access_list& out) {
    const auto follower =
        out.add_cluster(auth::acl_operation::cluster_action, on_denial::filter);
    for (const auto& t : req.topics) {
        out.add(auth::acl_operation::describe, auth::resource_type::topic, t.topic);
        out.unless(follower);
    }
}

boost::asio::awaitable<offset_for_leader_epoch_handler::response>
offset_for_leader_epoch_handler::handle(request_context& ctx, request req) {
    response resp;
    std::vector<api::offset_query> queries;
    // Each query's answer and the epoch it asked for. Pointers into the inner vectors stay
    // valid: each is reserved before it fills, and moving the outer one keeps their buffers.
    std::vector<std::pair<kafka::offset_for_leader_epoch_response::epoch_end_offset*, std::int32_t>>
        asked;
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        const auto& t = req.topics[ti];
        auto& tout = resp.topics.emplace_back();
        tout.topic = t.topic;
        tout.partitions.reserve(t.partitions.size());
        const bool allowed = ctx.verdicts().allowed(1 + ti);
        for (const auto& p : t.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition = p.partition;
            pout.error_code = kafka::error_code::none;
            pout.leader_epoch = -1;  // compat: UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET
            pout.end_offset = offset(-1);
            if (!allowed) {
                pout.error_code = kafka::error_code::topic_authorization_failed;
                continue;
            }
            if (p.current_leader_epoch > current_leader_epoch) {
                pout.error_code = kafka::error_code::unknown_leader_epoch;
                continue;
            }
            if (p.current_leader_epoch >= 0 && p.current_leader_epoch < current_leader_epoch) {
                pout.error_code = kafka::error_code::fenced_leader_epoch;
                continue;
            }
            queries.push_back({topic_name(t.topic), p.partition,
                               {api::offset_spec::kind::latest, -1}});
            asked.emplace_back(&pout, p.leader_epoch);
        }
    }
    // Single node: the high watermark is the log end offset.
    const auto ends = co_await ctx.svc().records.list_offsets(std::move(queries),
                                                              api::isolation::read_uncommitted);
    for (std::size_t i = 0; i < asked.size(); ++i) {
        auto& [pout, epoch] = asked[i];
        if (ends[i].error) {
            pout->error_code = to_kafka(ends[i].error);
            continue;
        }
        if (epoch > current_leader_epoch || epoch < 0) {
            continue;  // an epoch this partition never had
        }
        pout->leader_epoch = current_leader_epoch;
        pout->end_offset = ends[i].off;
    }
    co_return resp;
}

}  // namespace sluice::gateway
