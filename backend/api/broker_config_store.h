// Where the native backend's client level finds the dynamic broker configs (owned by
// backend/api): the Kafka front keeps them (gateway/kafka/dynamic_configs.h: checked, persisted,
// handed to api::topics), so the start-up file hands the native admin an adapter over that
// store, and REST's broker configs change what AlterConfigs changes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/api/common.h"
#include "backend/api/topics.h"

namespace sluice::backend::api {

class broker_config_store {
public:
    virtual ~broker_config_store() = default;
    /// The cluster-wide defaults set (Kafka's BROKER resource "").
    virtual std::map<std::string, std::string> cluster_default() const = 0;
    /// IncrementalAlterConfigs on the BROKER resource `name` ("" for the cluster-wide default,
    /// else this node's id), in force once it completes. Errors: invalid_config,
    /// invalid_request (a config that is not dynamic; the message says why), storage_error.
    virtual awaitable<backend_result<void>> alter(std::string name,
                                                  std::vector<config_change> changes,
                                                  bool validate_only) = 0;
};

}  // namespace sluice::backend::api
