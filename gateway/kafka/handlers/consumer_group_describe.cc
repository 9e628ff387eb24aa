// ConsumerGroupDescribe (KIP-848): state, epochs, members, assignments and target assignments
// of consumer groups. A classic or unknown group is GROUP_ID_NOT_FOUND.
#include <map>

#include "backend/api/groups.h"
#include "backend/api/topics.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/group_support.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

namespace {

using member_assignment = consumer_group_describe_handler::response::member_assignment;

member_assignment to_assignment(const api::topic_partitions& tp,
                                const std::map<uuid, std::string>& names) {
    member_assignment out;
    for (const auto& [id, parts] : tp) {
        auto& o = out.topic_partitions.emplace_back();
        o.topic_id = id;
        if (auto it = names.find(id); it != names.end()) {
            o.topic_name = it->second;
        }
        o.partitions.assign(parts.begin(), parts.end());
    }
    return out;
}

}  // namespace

/// DESCRIBE on each group, in request order. The authorized operations asked for are
/// reported quietly (visible).
void consumer_group_describe_handler::declare(std::int16_t, const request& req, access_list& out) {
    for (const auto& g : req.group_ids) {
        out.add(auth::acl_operation::describe, auth::resource_type::group, g);
    }
}

boost::asio::awaitable<consumer_group_describe_handler::response>
consumer_group_describe_handler::handle(request_context& ctx, request req) {
    auto& svc = ctx.svc();
    response resp;
    std::vector<group_id> ids;
    for (std::size_t gi = 0; gi < req.group_ids.size(); ++gi) {
        const auto& g = req.group_ids[gi];
        if (ctx.verdicts().denied(gi)) {
            auto& out = resp.groups.emplace_back();
            out.group_id = g;
            out.error_code = protocol::kafka::error_code::group_authorization_failed;
            continue;
        }
        ids.emplace_back(g);
    }
    if (ids.empty()) {
        co_return resp;
    }
    auto described = co_await svc.groups.describe_consumer_groups(std::move(ids));
    // Topic names of every assigned topic id, looked up once.
    std::map<uuid, std::string> names;
    for (const auto& d : described) {
        for (const auto& m : d.members) {
            for (const auto* tp : {&m.assignment, &m.target_assignment}) {
                for (const auto& [id, parts] : *tp) {
                    if (!names.contains(id)) {
                        auto info = co_await svc.topics.describe(id);
                        names[id] = info ? info->name.value : std::string();
                    }
                }
            }
        }
    }
    for (auto& d : described) {
        auto& out = resp.groups.emplace_back();
        out.group_id = d.group_id.value;
        out.error_code = to_kafka(d.error);
        if (!d.error.message.empty()) {
            out.error_message = d.error.message;
        }
        out.group_state = d.state;
        out.group_epoch = d.group_epoch;
        out.assignment_epoch = d.assignment_epoch;
        out.assignor_name = d.assignor_name;
        for (auto& m : d.members) {
            auto& om = out.members.emplace_back();
            om.member_id = m.member_id;
            om.instance_id = m.instance_id;
            om.rack_id = m.rack_id;
            om.member_epoch = m.member_epoch;
            om.client_id = m.client_id;
            om.client_host = m.client_host;
            for (const auto& t : m.subscribed_topic_names) {
                om.subscribed_topic_names.push_back(t.value);
            }
            om.subscribed_topic_regex = m.subscribed_topic_regex;
            om.assignment = to_assignment(m.assignment, names);
            om.target_assignment = to_assignment(m.target_assignment, names);
            om.member_type = 1;  // the consumer protocol (v1+)
        }
        if (req.include_authorized_operations) {
            out.authorized_operations = authorized_operations(
                ctx, auth::resource_type::group, out.group_id, group_operations);
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
