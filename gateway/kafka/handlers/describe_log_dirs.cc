// DescribeLogDirs: the data directory, its partitions and their sizes, and the disk's space.
#include <algorithm>
#include <map>

#include "backend/api/topics.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// DESCRIBE on the cluster.
void describe_log_dirs_handler::declare(std::int16_t, const request&, access_list& out) {
    out.add_cluster(auth::acl_operation::describe);
}

boost::asio::awaitable<describe_log_dirs_handler::response> describe_log_dirs_handler::handle(
    request_context& ctx, request req) {
    response resp;
    resp.error_code = kafka::error_code::none;
    if (ctx.verdicts().denied(0)) {
        resp.error_code = kafka::error_code::cluster_authorization_failed;
        co_return resp;
    }
    std::vector<topic_name> topics;
    if (req.topics) {
        for (const auto& wanted : *req.topics) {
            topics.emplace_back(wanted.topic);
        }
        if (topics.empty()) {
            co_return resp;  // an empty list asks for nothing
        }
    }
    const auto storage = co_await ctx.svc().topics.describe_storage(topics);
    auto& dir = resp.results.emplace_back();
    dir.error_code = kafka::error_code::none;
    dir.log_dir = storage.path;
    dir.total_bytes = storage.total_bytes;
    dir.usable_bytes = storage.usable_bytes;
    std::map<std::string, std::vector<partition_id>> only;
    if (req.topics) {
        for (const auto& wanted : *req.topics) {
            only[wanted.topic] = wanted.partitions;
        }
    }
    for (const auto& p : storage.partitions) {
        if (req.topics) {
            const auto& wanted = only[p.topic.value];
            if (std::find(wanted.begin(), wanted.end(), p.partition) == wanted.end()) {
                continue;
            }
        }
        if (dir.topics.empty() || dir.topics.back().name != p.topic.value) {
            dir.topics.emplace_back().name = p.topic.value;
        }
        dir.topics.back().partitions.push_back({p.partition, p.size_bytes, 0, false, {}});
    }
    co_return resp;
}

}  // namespace sluice::gateway
