// Fuzzes what sluice reads as configuration: properties files (--config, SLUICE_CONFIG), the
// broker's log settings and the per-topic configs that Kafka clients also send (CreateTopics,
// AlterConfigs, IncrementalAlterConfigs), and the listener, endpoint and log-level values.
//
// Any input is read or refused with config_error / errc::invalid_config and a reason, never
// anything else. What is read prints back (to_map, to_string) to text that reads to the same
// value.
//
// The first byte picks:
//   0: the rest as a properties file; every key=value of it as a topic config override and as
//      broker properties;
//   1: the rest as a Kafka listeners= list;
//   2: the rest as an --http / --sqs value, and as a plain endpoint;
//   3: the rest as --log-level's value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "backend/log/errc.h"
#include "backend/log/topic_config.h"
#include "gateway/core/config.h"
#include "gateway/core/logging.h"

using namespace sluice;
using gateway::config_error;

namespace {

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

bool same(const gateway::endpoint& a, const gateway::endpoint& b) {
    return a.host == b.host && a.port == b.port && a.enabled == b.enabled;
}

/// A topic config read from `overrides` prints to a map that reads to the same config.
void topic_configs(const std::map<std::string, std::string>& overrides) {
    const backend::log::topic_config defaults;
    std::string why;
    auto read = backend::log::topic_config::from_overrides(overrides, defaults, &why);
    if (!read) {
        check(read.error() == backend::log::errc::invalid_config);
        check(!why.empty());
    } else {
        auto again = backend::log::topic_config::from_overrides(read->to_map(), defaults);
        check(again.has_value() && *again == *read);
        for (const auto& [name, value] : read->to_map()) {
            check(read->get(name) == value);
        }
    }
    why.clear();
    auto broker = backend::log::broker_defaults(overrides, &why);
    if (!broker) {
        check(broker.error() == backend::log::errc::invalid_config);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 64 * 1024) {
        return 0;
    }
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    const std::string text(input);
    switch (data[0] % 4) {
        case 0: {
            std::map<std::string, std::string> props;
            try {
                props = gateway::parse_properties(input, "fuzz.properties");
            } catch (const config_error& e) {
                check(std::string_view(e.what()).starts_with("fuzz.properties:"));
                return 0;
            }
            topic_configs(props);
            break;
        }
        case 1: {
            try {
                const auto listeners = gateway::parse_kafka_listeners(text, "listeners");
                for (const auto& l : listeners) {
                    const auto back = gateway::parse_kafka_listener(l.to_string(), "listeners");
                    check(back.protocol == l.protocol && same(back.where, l.where));
                }
            } catch (const config_error& e) {
                check(std::string_view(e.what()).find("listeners") != std::string_view::npos);
            }
            break;
        }
        case 2: {
            try {
                bool tls = false;
                const auto e = gateway::parse_http_endpoint(text, "--http", tls);
                bool tls_back = false;
                const std::string printed = !e.enabled
                                                ? std::string("off")
                                                : (tls ? "https://" : "http://") + e.to_string();
                const auto back = gateway::parse_http_endpoint(printed, "--http", tls_back);
                check(same(back, e) && tls_back == tls);
            } catch (const config_error&) {
            }
            try {
                const auto e = gateway::parse_endpoint(text, "--kafka");
                const auto back =
                    gateway::parse_endpoint(e.enabled ? e.to_string() : "off", "--kafka");
                check(same(back, e));
            } catch (const config_error&) {
            }
            break;
        }
        default:
            try {
                (void)gateway::parse_log_levels(text);
            } catch (const config_error& e) {
                check(*e.what() != '\0');
            }
            break;
    }
    return 0;
}
