// IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on a topic's overrides.
#include <algorithm>
#include <sstream>

#include "backend/log/log_manager.h"
#include "gateway/kafka/config_view.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/blocking.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace blog = backend::log;

namespace {

enum class op : std::int8_t { set = 0, remove = 1, append = 2, subtract = 3 };

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

std::string join_list(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) {
        if (!out.empty()) {
            out.push_back(',');
        }
        out += i;
    }
    return out;
}

}  // namespace

boost::asio::awaitable<incremental_alter_configs_handler::response> incremental_alter_configs_handler::handle(
    request_context& ctx, request req) {
    auto& svc = ctx.svc();
    response resp;
    for (const auto& res : req.resources) {
        auto& out = resp.responses.emplace_back();
        out.resource_type = res.resource_type;
        out.resource_name = res.resource_name;
        out.error_code = kafka::error_code::none;
        if (static_cast<resource_type>(res.resource_type) != resource_type::topic) {
            out.error_code = kafka::error_code::invalid_request;
            out.error_message =
                "broker configs are static in sluice: set them with --config or --set";
            continue;
        }
        auto topic = svc.log.find_topic(res.resource_name);
        if (!topic) {
            out.error_code = kafka::error_code::unknown_topic_or_partition;
            out.error_message = "unknown topic '" + res.resource_name + "'";
            continue;
        }
        auto overrides = topic->overrides;
        bool bad = false;
        for (const auto& c : res.configs) {
            const auto* def = blog::find_topic_config_def(c.name);
            switch (static_cast<op>(c.config_operation)) {
                case op::set:
                    if (!c.value) {
                        bad = true;
                        out.error_message = "SET of '" + c.name + "' needs a value";
                        break;
                    }
                    overrides[c.name] = *c.value;
                    break;
                case op::remove:
                    overrides.erase(c.name);
                    break;
                case op::append:
                case op::subtract: {
                    if (def == nullptr || def->type != blog::config_type::list || !c.value) {
                        bad = true;
                        out.error_message = "APPEND/SUBTRACT apply only to list configs, not '" +
                                            c.name + "'";
                        break;
                    }
                    auto current = split_list(topic->config.get(c.name).value_or(""));
                    for (const auto& item : split_list(*c.value)) {
                        auto it = std::find(current.begin(), current.end(), item);
                        if (static_cast<op>(c.config_operation) == op::append) {
                            if (it == current.end()) {
                                current.push_back(item);
                            }
                        } else if (it != current.end()) {
                            current.erase(it);
                        }
                    }
                    overrides[c.name] = join_list(current);
                    break;
                }
                default:
                    bad = true;
                    out.error_message = "unknown config operation " +
                                        std::to_string(c.config_operation);
                    break;
            }
            if (bad) {
                break;
            }
        }
        if (bad) {
            out.error_code = kafka::error_code::invalid_request;
            continue;
        }
        std::string why;
        auto altered = co_await run_blocking(
            svc, [&] { return svc.log.alter_config(res.resource_name, overrides, req.validate_only, &why); });
        if (!altered) {
            out.error_code = to_kafka(altered.error());
            out.error_message = why.empty() ? altered.error().message() : why;
            continue;
        }
        if (!req.validate_only) {
            kafka_log().info("topic '{}': configs altered by client '{}'", res.resource_name,
                             ctx.client_id());
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
