#include "backend/api/logger.h"

#include <mutex>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace sluice {

spdlog::logger& named_logger(std::string_view name) {
    static std::mutex mu;
    std::string key(name);
    if (auto existing = spdlog::get(key)) {
        return *existing;
    }
    std::lock_guard lock(mu);
    if (auto existing = spdlog::get(key)) {
        return *existing;
    }
    // Registered loggers live until process exit; the registry keeps the shared_ptr.
    auto created = spdlog::stderr_color_mt(key);
    return *created;
}

}  // namespace sluice
