// The client level over a Kafka cluster (owned by backend/upstream): api::client through
// librdkafka, for `sluice --upstream BOOTSTRAP`. One idempotent producer shared by every front,
// a librdkafka consumer per api::consumer (a real member of the upstream group), an admin
// client for topics, configs, groups and offsets, the topology from the cluster's metadata.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "backend/api/client.h"

namespace sluice::backend::upstream {

struct upstream_options {
    /// librdkafka properties given to every client: bootstrap.servers and every other
    /// `upstream.<property>` setting without its prefix (security.protocol, sasl.*, ssl.*,
    /// client.id, ...).
    std::map<std::string, std::string> properties;
    /// The deadline of every call that waits for the cluster.
    std::chrono::milliseconds request_timeout{30000};
    /// How admin's describe_log_dirs asks each broker (librdkafka 2.0.2 has no call for
    /// DescribeLogDirs): the start-up file hands one in; without it the call is unsupported.
    std::shared_ptr<api::log_dirs_reader> log_dirs;
};

/// Builds the clients and starts connecting. A property librdkafka refuses throws
/// std::invalid_argument carrying librdkafka's message (start-up stops with it).
std::unique_ptr<api::client> make_upstream_client(upstream_options opts);

}  // namespace sluice::backend::upstream
