// OffsetFetch: a group's committed positions (-1 where none). Up to v7 one group (null topics
// = every committed partition, v2+); v8+ several groups per request, and v9 checks the
// KIP-848 member epoch.
#include <algorithm>

#include "backend/api/groups.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

namespace {

template <typename Topics>
std::optional<std::vector<api::topic_partition_list>> to_fetch_topics(
    const std::optional<Topics>& in) {
    if (!in) {
        return std::nullopt;
    }
    std::vector<api::topic_partition_list> out;
    for (const auto& t : *in) {
        auto& ft = out.emplace_back();
        ft.topic = topic_name(t.name);
        ft.partitions.assign(t.partition_indexes.begin(), t.partition_indexes.end());
    }
    return out;
}

template <typename Partition>
Partition to_partition(const api::fetched_offset& p, kafka::error_code group_error) {
    Partition out;
    out.partition_index = p.partition;
    out.committed_offset = p.committed;
    out.committed_leader_epoch = p.leader_epoch;
    out.metadata = p.metadata;
    out.error_code = p.error ? to_kafka(p.error) : group_error;
    return out;
}

/// DESCRIBE on each topic: a named topic the principal may not describe answers
/// TOPIC_AUTHORIZATION_FAILED (no offsets); from a listing of every topic it is dropped.
/// Returns the names of the refused topics.
std::vector<std::string> filter_topics(const request_context& ctx, api::offset_fetch_result& res,
                                       bool listed) {
    std::vector<std::string> refused;
    if (!policy_enabled(ctx)) {
        return refused;
    }
    std::erase_if(res.topics, [&](api::fetched_offsets_topic& t) {
        if (listed) {
            return !visible(ctx, auth::acl_operation::describe, auth::resource_type::topic,
                            t.topic.value);
        }
        if (!decide_late(ctx, auth::acl_operation::describe, auth::resource_type::topic,
                         t.topic.value)) {
            for (auto& p : t.partitions) {
                api::fetched_offset blank;
                blank.partition = p.partition;
                p = std::move(blank);
            }
            refused.push_back(t.topic.value);
        }
        return false;
    });
    return refused;
}

kafka::error_code topic_error(const std::vector<std::string>& refused, const std::string& name) {
    return std::find(refused.begin(), refused.end(), name) != refused.end()
               ? kafka::error_code::topic_authorization_failed
               : kafka::error_code::none;
}

}  // namespace

/// DESCRIBE on the group (v8+: on each group, in request order). The topics are decided on
/// the backend's answer (filter_topics): a listing of every committed topic is filtered quietly.
void offset_fetch_handler::declare(std::int16_t version, const request& req, access_list& out) {
    if (version >= 8) {
        for (const auto& g : req.groups) {
            out.add(auth::acl_operation::describe, auth::resource_type::group, g.group_id);
        }
        return;
    }
    out.add(auth::acl_operation::describe, auth::resource_type::group, req.group_id);
}

boost::asio::awaitable<offset_fetch_handler::response> offset_fetch_handler::handle(
    request_context& ctx, request req) {
    const std::int16_t version = ctx.version();
    auto& groups = ctx.svc().groups;
    response resp;
    if (version >= 8) {
        std::vector<api::offset_fetch_request> reqs;
        std::vector<std::string> denied_groups;
        for (std::size_t gi = 0; gi < req.groups.size(); ++gi) {
            const auto& g = req.groups[gi];
            if (ctx.verdicts().denied(gi)) {
                denied_groups.push_back(g.group_id);
                continue;
            }
            api::offset_fetch_request r;
            r.group_id = group_id(g.group_id);
            r.member_id = g.member_id;
            r.member_epoch = g.member_epoch;
            r.topics = to_fetch_topics(g.topics);
            r.require_stable = req.require_stable;
            reqs.push_back(std::move(r));
        }
        for (auto& name : denied_groups) {
            auto& out = resp.groups.emplace_back();
            out.group_id = std::move(name);
            out.error_code = kafka::error_code::group_authorization_failed;
        }
        if (reqs.empty()) {
            co_return resp;
        }
        std::vector<bool> listed;
        for (const auto& one : reqs) {
            listed.push_back(!one.topics.has_value());
        }
        auto results = co_await groups.fetch_offsets(std::move(reqs));
        for (std::size_t gi = 0; gi < results.size(); ++gi) {
            auto& res = results[gi];
            const auto refused = filter_topics(ctx, res, gi < listed.size() && listed[gi]);
            auto& out = resp.groups.emplace_back();
            out.group_id = res.group_id.value;
            out.error_code = to_kafka(res.error);
            for (const auto& t : res.topics) {
                auto& ot = out.topics.emplace_back();
                ot.name = t.topic.value;
                const auto err = topic_error(refused, ot.name);
                for (const auto& p : t.partitions) {
                    ot.partitions.push_back(
                        to_partition<response::offset_fetch_response_partitions>(p, err));
                }
            }
        }
        co_return resp;
    }
    api::offset_fetch_request r;
    r.group_id = group_id(req.group_id);
    r.topics = to_fetch_topics(req.topics);
    if (version < 2 && !r.topics) {
        r.topics.emplace();  // null means "all" only from v2
    }
    r.require_stable = req.require_stable;
    const auto asked = r.topics;
    if (ctx.verdicts().denied(0)) {
        resp.error_code = kafka::error_code::group_authorization_failed;
        // Before v2 there is no top-level error: every requested partition carries it.
        for (const auto& t : asked.value_or(std::vector<api::topic_partition_list>{})) {
            auto& ot = resp.topics.emplace_back();
            ot.name = t.topic.value;
            for (auto p : t.partitions) {
                api::fetched_offset fp;
                fp.partition = p;
                ot.partitions.push_back(to_partition<response::offset_fetch_response_partition>(
                    fp, kafka::error_code::group_authorization_failed));
            }
        }
        co_return resp;
    }
    std::vector<api::offset_fetch_request> one;
    one.push_back(std::move(r));
    auto res = std::move((co_await groups.fetch_offsets(std::move(one))).front());
    const auto refused = filter_topics(ctx, res, !asked.has_value());
    const auto group_error = to_kafka(res.error);
    resp.error_code = group_error;
    if (res.error && asked) {
        // Before v2 there is no top-level error: every requested partition carries it.
        for (const auto& t : *asked) {
            auto& ot = resp.topics.emplace_back();
            ot.name = t.topic.value;
            for (auto p : t.partitions) {
                api::fetched_offset fp;
                fp.partition = p;
                ot.partitions.push_back(
                    to_partition<response::offset_fetch_response_partition>(fp, group_error));
            }
        }
        co_return resp;
    }
    for (const auto& t : res.topics) {
        auto& ot = resp.topics.emplace_back();
        ot.name = t.topic.value;
        const auto err = topic_error(refused, ot.name);
        for (const auto& p : t.partitions) {
            ot.partitions.push_back(
                to_partition<response::offset_fetch_response_partition>(p, err));
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
