// DeleteTopics: by name (v0-5) or by name or id (v6+).
#include "backend/log/log_manager.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/blocking.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

boost::asio::awaitable<delete_topics_handler::response> delete_topics_handler::handle(request_context& ctx,
                                                                             request req) {
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
    for (const auto& [name, id] : wanted) {
        auto& out = resp.responses.emplace_back();
        out.name = name;
        out.topic_id = id;
        out.error_code = kafka::error_code::none;
        std::optional<backend::log::topic_info> info;
        if (name) {
            info = svc.log.find_topic(*name);
        } else if (!id.is_zero()) {
            info = svc.log.find_topic(id);
        }
        if (!info) {
            out.error_code = name ? kafka::error_code::unknown_topic_or_partition
                                  : kafka::error_code::unknown_topic_id;
            continue;
        }
        out.name = info->name;
        out.topic_id = info->id;
        if (!svc.kafka.delete_topic_enable) {
            out.error_code = kafka::error_code::topic_deletion_disabled;
            out.error_message = "delete.topic.enable is false";
            continue;
        }
        auto deleted = co_await run_blocking(svc, [&] { return svc.log.delete_topic(info->name); });
        if (!deleted) {
            out.error_code = to_kafka(deleted.error());
            out.error_message = deleted.error().message();
            continue;
        }
        kafka_log().info("deleted topic '{}' for client '{}'", info->name, ctx.client_id());
    }
    co_return resp;
}

}  // namespace sluice::gateway
