// DescribeLogDirs: the data directory, its partitions and their sizes, and the disk's space.
#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>

#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

boost::asio::awaitable<describe_log_dirs_handler::response> describe_log_dirs_handler::handle(
    request_context& ctx, request req) {
    auto& svc = ctx.svc();
    response resp;
    resp.error_code = kafka::error_code::none;
    auto& dir = resp.results.emplace_back();
    dir.error_code = kafka::error_code::none;
    dir.log_dir = std::filesystem::absolute(svc.cfg.data_dir).string();
    struct statvfs fs {};
    if (::statvfs(dir.log_dir.c_str(), &fs) == 0) {
        dir.total_bytes = static_cast<std::int64_t>(fs.f_blocks) * static_cast<std::int64_t>(fs.f_frsize);
        dir.usable_bytes = static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize);
    }
    auto describe = [&](const backend::log::topic_info& info, const std::vector<partition_id>* only) {
        auto& t = dir.topics.emplace_back();
        t.name = info.name;
        for (std::int32_t p = 0; p < info.partitions; ++p) {
            if (only && std::find(only->begin(), only->end(), partition_id(p)) == only->end()) {
                continue;
            }
            auto log = svc.log.partition(info.name, partition_id(p));
            if (!log) {
                continue;
            }
            t.partitions.push_back({partition_id(p), log->size_bytes(), 0, false, {}});
        }
    };
    if (!req.topics) {
        for (const auto& info : svc.log.list_topics()) {
            describe(info, nullptr);
        }
    } else {
        for (const auto& wanted : *req.topics) {
            if (auto info = svc.log.find_topic(wanted.topic)) {
                describe(*info, &wanted.partitions);
            }
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
