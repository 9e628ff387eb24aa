// ConsumerGroupDescribe (KIP-848): state, epochs, members, assignments and target assignments
// of consumer groups. A classic or unknown group is GROUP_ID_NOT_FOUND.
#include "backend/group/group_coordinator.h"
#include "backend/log/log_manager.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/group_support.h"
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace bgroup = backend::group;

namespace {

using member_assignment = consumer_group_describe_handler::response::member_assignment;

member_assignment to_assignment(const bgroup::topic_partitions& tp,
                                const backend::log::log_manager& log) {
    member_assignment out;
    for (const auto& [id, parts] : tp) {
        auto& o = out.topic_partitions.emplace_back();
        o.topic_id = id;
        if (auto info = log.find_topic(id)) {
            o.topic_name = info->name;
        }
        for (auto p : parts) {
            o.partitions.push_back(partition_id(p));
        }
    }
    return out;
}

}  // namespace

boost::asio::awaitable<consumer_group_describe_handler::response>
consumer_group_describe_handler::handle(request_context& ctx, request req) {
    auto& svc = ctx.svc();
    response resp;
    for (auto& d : svc.groups.describe_consumer_groups(req.group_ids)) {
        auto& out = resp.groups.emplace_back();
        out.group_id = d.group_id;
        out.error_code = to_kafka(d.error);
        out.error_message = d.error_message;
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
            om.subscribed_topic_names = m.subscribed_topic_names;
            om.subscribed_topic_regex = m.subscribed_topic_regex;
            om.assignment = to_assignment(m.assignment, svc.log);
            om.target_assignment = to_assignment(m.target_assignment, svc.log);
            om.member_type = 1;  // the consumer protocol (v1+)
        }
        if (req.include_authorized_operations) {
            out.authorized_operations = all_group_operations;
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
