// DeleteTopics: by name (v0-5) or by name or id (v6+). Topics of sluice's own state (internal
// and "_sluice*") are refused with POLICY_VIOLATION.
#include "backend/api/sluice_topics.h"
#include "backend/api/topics.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// DELETE on each topic, in request order; one named by id only (v6+) is decided once the
/// backend names it (add_later).
void delete_topics_handler::declare(std::int16_t version, const request& req, access_list& out) {
    if (version < 6) {
        for (const auto& n : req.topic_names) {
            out.add(auth::acl_operation::remove, auth::resource_type::topic, n);
        }
        return;
    }
    for (const auto& t : req.topics) {
        if (t.name) {
            out.add(auth::acl_operation::remove, auth::resource_type::topic, *t.name);
        } else {
            out.add_later(auth::acl_operation::remove, auth::resource_type::topic);
        }
    }
}

boost::asio::awaitable<delete_topics_handler::response> delete_topics_handler::handle(
    request_context& ctx, request req) {
    auto& svc = ctx.svc();
    response resp;
    std::vector<std::pair<std::optional<std::string>, uuid>> wanted;
    if (ctx.version() >= 6) {
        for (const auto& t : req.topics) {
            wanted.emplace_back(t.name, t.topic_id);
        }
    } else {
        for (const auto& n : req.topic_names) {
            wanted.emplace_back(n, uuid{});
        }
    }
    for (std::size_t ti = 0; ti < wanted.size(); ++ti) {
        const auto& [name, id] = wanted[ti];
        auto& out = resp.responses.emplace_back();
        out.name = name;
        out.topic_id = id;
        out.error_code = kafka::error_code::none;
        std::optional<backend::api::topic_description> info;
        if (name && ctx.verdicts().denied(ti)) {
            out.error_code = kafka::error_code::topic_authorization_failed;
            continue;
        }
        if (name) {
            info = co_await svc.topics.describe(topic_name(*name));
        } else if (!id.is_zero()) {
            info = co_await svc.topics.describe(id);
        }
        if (!info) {
            out.error_code = name ? kafka::error_code::unknown_topic_or_partition
                                  : kafka::error_code::unknown_topic_id;
            continue;
        }
        if (!name && !decide_late(ctx, auth::acl_operation::remove, auth::resource_type::topic,
                                  info->name.value)) {
            out.error_code = kafka::error_code::topic_authorization_failed;
            continue;
        }
        out.name = info->name.value;
        out.topic_id = info->id;
        if (!svc.kafka.delete_topic_enable) {
            out.error_code = kafka::error_code::topic_deletion_disabled;
            out.error_message = "delete.topic.enable is false";
            continue;
        }
        if (info->internal || backend::api::is_sluice_owned_topic(info->name.value)) {
            // compat: Kafka's broker deletes its internal topics when asked (only its tools
            // refuse); sluice refuses every topic of its own state, whose loss breaks a module
            // for good (backend/api/sluice_topics.h).
            out.error_code = kafka::error_code::policy_violation;
            out.error_message = "Topic " + info->name.value +
                                " holds sluice's own state and cannot be deleted.";
            continue;
        }
        auto deleted = co_await svc.topics.remove(info->name);
        if (!deleted) {
            out.error_code = to_kafka(deleted.error().code);
            out.error_message = deleted.error().message;
            continue;
        }
        kafka_log().info("deleted topic '{}' for client '{}'", info->name, ctx.client_id());
    }
    co_return resp;
}

}  // namespace sluice::gateway
