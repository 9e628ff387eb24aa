// api::topics over the native log (owned by backend/native): topic lookups from the log
// manager's in-memory map, administration (create, delete, grow, reconfigure) on the backend's
// blocking pool, and the views of partitions and storage.
//
// Concurrency: thread-safe; lookups take the log manager's shared lock, administration runs
// on the pool (the log manager serialises it).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>

#include "backend/api/topics.h"
#include "backend/log/log_manager.h"
#include "backend/native/traffic.h"

namespace sluice::backend::native {

class native_topics final : public api::topics {
public:
    /// `properties`: the broker settings the log defaults were read from (Kafka's names), to
    /// tell an administrator where each config value comes from.
    native_topics(log::log_manager& log, std::map<std::string, std::string> properties,
                  boost::asio::any_io_executor pool, const traffic& counters);

    api::awaitable<std::optional<api::topic_description>> describe(topic_name name) override;
    api::awaitable<std::optional<api::topic_description>> describe(uuid id) override;
    api::awaitable<std::vector<api::topic_description>> list() override;
    api::awaitable<api::backend_result<api::created_topic>> create(api::new_topic spec) override;
    api::awaitable<api::backend_result<void>> remove(topic_name name) override;
    api::awaitable<api::backend_result<void>> create_partitions(topic_name name, std::int32_t total,
                                                              bool validate_only) override;
    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_configs(
        topic_name name) override;
    api::awaitable<api::backend_result<void>> replace_configs(
        topic_name name, std::map<std::string, std::string> configs, bool validate_only) override;
    api::awaitable<api::backend_result<void>> alter_configs(topic_name name,
                                                          std::vector<api::config_change> changes,
                                                          bool validate_only) override;
    std::vector<api::config_entry> backend_configs() const override;
    std::vector<std::string> dynamic_config_names() const override;
    api::backend_result<void> set_dynamic_configs(api::dynamic_broker_configs configs,
                                                bool validate_only) override;
    api::awaitable<void> apply_dynamic_configs() override;
    std::vector<api::partition_state> partition_states() const override;
    api::awaitable<api::storage_description> describe_storage(
        std::vector<topic_name> topics) override;

    /// The description of a log topic.
    static api::topic_description describe_info(const log::topic_info& info);

private:
    std::vector<api::config_entry> topic_configs(const log::topic_info& topic) const;
    /// Where the broker property `key` gets its value, most precedent first: this broker's
    /// dynamic config, the cluster default, the static settings, Kafka's default (each for
    /// every synonym of `key`, as Kafka's DescribeConfigs lists them).
    std::vector<api::config_synonym> broker_synonyms(std::string_view key,
                                                     std::string_view default_value) const;
    /// The topic defaults of the static settings with `dynamic` layered over them.
    result<log::topic_config> layered_defaults(const api::dynamic_broker_configs& dynamic,
                                               std::string* error) const;
    api::partition_state state_of(const log::partition_log& p) const;

    log::log_manager& log_;
    const std::map<std::string, std::string> properties_;
    mutable std::mutex dynamic_mu_;     // guards dynamic_
    api::dynamic_broker_configs dynamic_;
    std::mutex apply_mu_;               // one apply_dynamic_configs() at a time
    boost::asio::any_io_executor pool_;
    const traffic& traffic_;
};

}  // namespace sluice::backend::native
