// What the Kafka front's handlers stand on: its settings, the metrics registry, and the
// backend's interfaces (backend/api), never an implementation. Built once by run_server and
// handed (by reference) to every listener and request handler. Owns nothing; run_server owns
// the objects and outlives every connection. Thread-safety is that of each service.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gateway/core/config.h"
#include "gateway/core/metrics.h"

#include "auth/authorizer.h"
#include "auth/credential_store.h"
#include "auth/failure_limiter.h"
#include "auth/jwt/jwt.h"
#include "backend/api/groups.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"
#include "backend/api/transactions.h"

namespace sluice::gateway {

class request_budget;
class quota_meter;
class dynamic_configs;

/// Settings of the Kafka front, read once from the configuration (Kafka's names).
struct kafka_settings {
    std::int32_t node_id = 0;
    std::string cluster_id;
    /// --advertise-kafka; empty host means "the address the client connected to".
    endpoint advertised;
    bool auto_create_topics = true;            // auto.create.topics.enable (on Metadata)
    std::int32_t num_partitions = 1;           // num.partitions
    std::int64_t max_request_bytes = 104857600;  // socket.request.max.bytes
    std::int64_t idle_timeout_ms = 600000;     // connections.max.idle.ms
    std::int32_t max_in_flight = 64;           // pipelined requests read ahead per connection
    bool delete_topic_enable = true;           // delete.topic.enable
    /// fetch.response.max.bytes: the most one Fetch response carries, below what the client
    /// allows. -1 (default) adapts to the connection: about one round trip's worth at 1 GB/s,
    /// at least 1 MiB; 0 leaves only the client's limits.
    std::int64_t fetch_response_max_bytes = -1;
    /// queued.max.request.bytes: bytes of requests read but not yet answered, across all
    /// connections; -1 means no bound (Kafka's default). 256 MiB: see docs/configuration.md.
    std::int64_t queued_max_request_bytes = 268435456;
    std::int32_t queued_max_requests = 500;  // queued.max.requests, across all connections
    /// sasl.enabled.mechanisms: what SaslHandshake offers on SASL listeners, Kafka's names.
    std::vector<std::string> sasl_mechanisms{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"};
    /// connections.max.reauth.ms (KIP-368): a SASL session's longest life; 0 = no limit (a
    /// token's expiry then ends nothing either, as in Kafka).
    std::int64_t max_reauth_ms = 0;
};

struct services {
    const config& cfg;
    kafka_settings kafka;
    metrics_registry& metrics;
    backend::api::topics& topics;
    backend::api::records& records;
    backend::api::groups& groups;
    backend::api::transactions& txn;
    /// The bound on Kafka requests read but not yet answered (queued.max.request.bytes,
    /// queued.max.requests), shared by all connections.
    request_budget& kafka_budget;
    /// The SASL users (DATA_DIR/credentials), loaded at start.
    auth::credential_store& users;
    /// Failed authentications per client address, to slow down guessing.
    auth::failure_limiter& auth_failures;
    /// The ACLs (DATA_DIR/acls) and authorizer.enabled, super.users,
    /// allow.everyone.if.no.acl.found; off by default (then every check passes at once).
    auth::authorizer& authz;
    /// The JWT verifier for OAUTHBEARER and HTTP Bearer; null when no keys are configured.
    const auth::jwt_verifier* tokens = nullptr;
    /// The client quotas (DATA_DIR/quotas, quota.*) and their metrics; null in tests that
    /// build services without them (then nothing is throttled).
    quota_meter* quotas = nullptr;
    /// The dynamic broker and group configs (DATA_DIR/dynamic-configs) that AlterConfigs and
    /// IncrementalAlterConfigs change; null in tests that build services without them (then
    /// BROKER and GROUP resources cannot be altered).
    dynamic_configs* dynamic = nullptr;
};

}  // namespace sluice::gateway
