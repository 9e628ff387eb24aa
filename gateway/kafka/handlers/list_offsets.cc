// ListOffsets: the earliest (-2), latest (-1), max-timestamp (-3) offset, or the first offset at
// or after a timestamp, per partition. v0 answers with a list of old-style offsets.
#include "backend/api/records.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

namespace {

/// Kafka's special timestamps, as offset specs; nullopt for a negative value it does not know.
std::optional<api::offset_spec> spec_of(std::int64_t timestamp) {
    using kind = api::offset_spec::kind;
    switch (timestamp) {
        case -1: return api::offset_spec{kind::latest, -1};
        case -2: return api::offset_spec{kind::earliest, -1};
        case -3: return api::offset_spec{kind::max_timestamp, -1};
        case -4: return api::offset_spec{kind::earliest_local, -1};
        case -5: return api::offset_spec{kind::latest_tiered, -1};
        default:
            if (timestamp < 0) {
                return std::nullopt;
            }
            return api::offset_spec{kind::timestamp, timestamp};
    }
}

}  // namespace

/// DESCRIBE on each topic, in request order.
void list_offsets_handler::declare(std::int16_t, const request& req, access_list& out) {
    for (const auto& t : req.topics) {
        out.add(auth::acl_operation::describe, auth::resource_type::topic, t.name);
    }
}

boost::asio::awaitable<list_offsets_handler::response> list_offsets_handler::handle(
    request_context& ctx, request req) {
    const std::int16_t version = ctx.version();
    response resp;
    std::vector<api::offset_query> queries;
    std::vector<std::pair<std::size_t, std::size_t>> where;  // the answer of each query
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        const auto& t = req.topics[ti];
        auto& tout = resp.topics.emplace_back();
        tout.name = t.name;
        const bool denied = ctx.verdicts().denied(ti);
        for (const auto& p : t.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition_index = p.partition_index;
            pout.error_code = kafka::error_code::none;
            if (denied) {
                pout.error_code = kafka::error_code::topic_authorization_failed;
                continue;
            }
            if (p.current_leader_epoch > 0) {
                pout.error_code = kafka::error_code::unknown_leader_epoch;
                continue;
            }
            auto spec = spec_of(p.timestamp);
            if (!spec) {
                pout.error_code = kafka::error_code::invalid_request;
                continue;
            }
            queries.push_back({topic_name(t.name), p.partition_index, *spec});
            where.emplace_back(resp.topics.size() - 1, tout.partitions.size() - 1);
        }
    }
    // read_committed readers see up to the last stable offset (v2+).
    const auto isolation = version >= 2 && req.isolation_level == 1
                               ? api::isolation::read_committed
                               : api::isolation::read_uncommitted;
    const auto found = co_await ctx.svc().records.list_offsets(std::move(queries), isolation);
    for (std::size_t i = 0; i < found.size(); ++i) {
        const auto& f = found[i];
        const auto& q = req.topics[where[i].first].partitions[where[i].second];
        auto& pout = resp.topics[where[i].first].partitions[where[i].second];
        if (f.error) {
            pout.error_code = to_kafka(f.error);
            continue;
        }
        if (version == 0) {
            if (f.off.value >= 0 && q.max_num_offsets > 0) {
                pout.old_style_offsets.push_back(f.off);
            }
        } else {
            pout.offset = f.off;
            pout.timestamp = f.timestamp;
            pout.leader_epoch = f.leader_epoch;
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
