// The dynamic configs of the Kafka front's admin APIs (owned by gateway/kafka): Kafka's
// dynamic broker configs (KIP-226; BROKER resource "<node id>" for this broker, "" for the
// cluster-wide default) and the groups' own configs (KIP-848; GROUP resources), as
// AlterConfigs and IncrementalAlterConfigs change them and DescribeConfigs shows them. The
// backend puts them in force (api::topics::set_dynamic_configs, api::groups::
// set_group_configs); this store checks requests as Kafka does and persists what it accepted.
//
// File DATA_DIR/dynamic-configs (text, mode 0600, rewritten atomically on every change:
// auth::write_private_file):
//   sluice-dynamic-configs 1
//   broker NAME KEY VALUE     NAME: "-" for the cluster default, else a node id
//   group NAME KEY VALUE
// NAME, KEY and VALUE are percent-encoded (every byte but [A-Za-z0-9._] as %XX; "-" is the
// empty string). After a crash the old or the new file is there, never a mix.
//
// Lifecycle: built by run_server; load() reads the file and hands its configs to the backend
// before any listener starts. Concurrency: thread-safe; a change holds one mutex while it
// checks, records the configs in the backend and rewrites the file (a few small writes and
// fsyncs, as the ACL and quota files); the caller then awaits api::topics::
// apply_dynamic_configs outside it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/api/groups.h"
#include "backend/api/topics.h"
#include "protocol/kafka/error_code.h"

namespace sluice::gateway {

/// One change of a resource's configs: IncrementalAlterConfigs' operations (Kafka's ids:
/// SET 0, DELETE 1, APPEND 2, SUBTRACT 3).
struct config_op {
    enum class kind : std::int8_t { set = 0, remove = 1, append = 2, subtract = 3 };
    std::string name;
    kind operation = kind::set;
    std::optional<std::string> value;
};

/// The answer for one resource: error code and Kafka's message (none and empty on success).
struct config_outcome {
    protocol::kafka::error_code error = protocol::kafka::error_code::none;
    std::string message;
    /// The backend's dynamic broker configs changed: await apply_dynamic_configs().
    bool apply_needed = false;
};

class dynamic_configs {
public:
    /// Names the settings sluice reads at start and cannot change while running (answered
    /// "Cannot update these configs dynamically"), as opposed to names it does not know.
    using static_name_check = std::function<bool(const std::string&)>;

    dynamic_configs(std::filesystem::path file, std::int32_t node_id,
                    backend::api::topics& topics, backend::api::groups& groups,
                    static_name_check is_static);

    static std::filesystem::path path_in(const std::filesystem::path& data_dir);

    /// Reads the file (a missing file is an empty store) and hands its configs to the
    /// backend. Configs the backend refuses now (a name or value a newer or older sluice
    /// took) are dropped with an error line, as Kafka ignores invalid stored configs. Throws
    /// std::runtime_error for a damaged file. Call api::topics::apply_dynamic_configs after.
    void load();

    /// AlterConfigs (`replace`: the resource's configs become exactly `ops`, every one a
    /// SET) or IncrementalAlterConfigs on a BROKER resource named `name`.
    config_outcome alter_broker(const std::string& name, const std::vector<config_op>& ops,
                                bool replace, bool validate_only);
    /// The same on a GROUP resource.
    config_outcome alter_group(const std::string& group, const std::vector<config_op>& ops,
                               bool replace, bool validate_only);

    /// The cluster-wide default configs set (the BROKER resource "").
    std::map<std::string, std::string> cluster_default() const;

private:
    struct resource_key {
        std::string type;  // "broker" or "group"
        std::string name;
        auto operator<=>(const resource_key&) const = default;
    };
    using config_map = std::map<std::string, std::string>;

    /// `current` with `ops` applied (Kafka's ConfigAdminManager.prepareIncrementalConfigs);
    /// `is_list` tells which names APPEND and SUBTRACT may take.
    static std::optional<config_outcome> apply_ops(config_map& current,
                                                   const std::vector<config_op>& ops,
                                                   bool replace,
                                                   const std::function<bool(const std::string&)>& is_list);
    backend::api::dynamic_broker_configs broker_layers_locked() const;
    void save_locked() const;
    /// Puts `next` in effect for `key` (empty: removes it) and saves the file; when saving
    /// fails, restores the previous map, calls `reapply_previous` to put the previous values
    /// back where they act, and returns KAFKA_STORAGE_ERROR.
    std::optional<config_outcome> store_locked(const resource_key& key, const config_map& next,
                                               const std::function<void()>& reapply_previous);

    const std::filesystem::path file_;
    const std::int32_t node_id_;
    backend::api::topics& topics_;
    backend::api::groups& groups_;
    const static_name_check is_static_;
    std::set<std::string> dynamic_names_;  // the backend's dynamic broker configs

    mutable std::mutex mu_;
    std::map<resource_key, config_map> configs_;
};

}  // namespace sluice::gateway
