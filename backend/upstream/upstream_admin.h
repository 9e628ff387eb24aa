// api::admin over a Kafka cluster (owned by backend/upstream): topology from the cluster's
// metadata, topics, configs, offsets, records and groups through librdkafka's admin API.
#pragma once

#include <chrono>
#include <memory>

#include <librdkafka/rdkafka.h>

#include "backend/api/client.h"
#include "backend/upstream/upstream_monitor.h"
#include "backend/upstream/upstream_producer.h"

namespace sluice::backend::upstream {

/// The admin of the upstream client level, over the client's producer handle (librdkafka's
/// admin API works on any handle).
///
/// Every call runs its blocking librdkafka work (rd_kafka_metadata, clusterid, an admin
/// request waited for on a queue of its own, offsets_for_times) on the client's thread pool and
/// resumes on the caller's executor; each is bounded by `request_timeout` (the admin request's
/// own timeout, and the wait for its result a little longer).
/// What librdkafka 2.0.2 lacks: IncrementalAlterConfigs (alter_topic_configs reads the topic's
/// own configs, applies the changes and writes the whole set with AlterConfigs: not atomic
/// against a concurrent writer), ListOffsets with an isolation level (a read_committed
/// `latest` answers the high watermark), max_timestamp (unsupported), topic ids (zero), racks
/// and config types and documentation (not in its answers), the group generation (0).
///
/// Lifecycle: made by the client; `rk`, `pool` and `producer` outlive it.
/// Concurrency: thread-safe.
class upstream_admin final : public api::admin {
  public:
    upstream_admin(rd_kafka_t* rk, blocking_pool& pool, upstream_monitor& monitor,
                   upstream_producer& producer, std::chrono::milliseconds request_timeout,
                   std::shared_ptr<api::log_dirs_reader> log_dirs = nullptr);

    api::awaitable<api::backend_result<api::cluster_info>> describe_cluster() override;
    api::awaitable<api::backend_result<std::vector<api::topic_info>>> list_topics() override;
    api::awaitable<api::backend_result<api::topic_info>> describe_topic(topic_name name) override;

    api::awaitable<api::backend_result<api::topic_info>> create_topic(api::new_topic spec) override;
    api::awaitable<api::backend_result<void>> delete_topic(topic_name name) override;
    api::awaitable<api::backend_result<void>> create_partitions(topic_name name,
                                                                std::int32_t total) override;
    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_topic_configs(
        topic_name name) override;
    api::awaitable<api::backend_result<void>> alter_topic_configs(
        topic_name name, std::vector<api::config_change> changes, bool validate_only) override;
    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_broker_configs(
        std::int32_t node_id) override;
    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_cluster_configs()
        override;
    api::awaitable<api::backend_result<void>> alter_broker_configs(
        std::optional<std::int32_t> node_id, std::vector<api::config_change> changes,
        bool validate_only) override;

    api::awaitable<std::vector<api::found_offset>> list_offsets(
        std::vector<api::offset_query> queries, api::isolation isolation) override;
    api::awaitable<std::vector<api::backend_result<offset>>> delete_records(
        std::vector<api::delete_records_request> reqs) override;

    api::awaitable<api::backend_result<std::vector<api::listed_group>>> list_groups() override;
    api::awaitable<api::backend_result<api::group_view>> describe_group(group_id id) override;
    api::awaitable<api::backend_result<void>> delete_group(group_id id) override;
    api::awaitable<api::backend_result<std::vector<api::committed_offset>>> committed_offsets(
        group_id id, std::vector<api::topic_partition> parts) override;
    api::awaitable<api::backend_result<void>> alter_committed_offsets(
        group_id id, std::vector<api::offset_commit> offsets) override;

    /// The brokers of describe_cluster, each asked by the log_dirs_reader given (unsupported
    /// without one).
    api::awaitable<api::backend_result<api::log_sizes>> describe_log_dirs() override;

    // upstream_admin_acls.cc
    api::awaitable<api::backend_result<std::vector<api::acl_binding>>> describe_acls(
        api::acl_filter filter) override;
    api::awaitable<api::backend_result<void>> create_acls(
        std::vector<api::acl_binding> bindings) override;
    api::awaitable<api::backend_result<std::vector<api::acl_binding>>> delete_acls(
        api::acl_filter filter) override;

  private:
    /// Counts a failed result and hands it back.
    template <typename T>
    api::backend_result<T> counted(api::backend_result<T> r) {
        if (!r) {
            monitor_.count_error(r.error());
        }
        return r;
    }

    rd_kafka_t* rk_;
    blocking_pool& pool_;
    upstream_monitor& monitor_;
    upstream_producer& producer_;
    std::chrono::milliseconds timeout_;
    std::shared_ptr<api::log_dirs_reader> log_dirs_;
};

}  // namespace sluice::backend::upstream
