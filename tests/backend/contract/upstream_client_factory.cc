#include "tests/backend/contract/upstream_client_factory.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "backend/upstream/upstream_client.h"
#include "tests/backend/upstream/mock_cluster.h"

namespace sluice::backend::contract {
namespace {

using upstream::test::shared_mock_cluster;

/// Kafka's rule for topic names (org.apache.kafka.common.internals.Topic.validate).
bool legal_topic_name(const std::string& n) {
    if (n.empty() || n.size() > 249 || n == "." || n == "..") {
        return false;
    }
    return std::all_of(n.begin(), n.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

/// The upstream admin, except create_topic: the 2.0.2 mock has no CreateTopics, so topics are
/// made in the mock directly after the checks a broker makes (name, partition count,
/// existence). Everything else goes to the cluster through librdkafka.
class mock_backed_admin final : public api::admin {
public:
    explicit mock_backed_admin(api::admin& inner) : inner_(inner) {}

    api::awaitable<api::backend_result<api::topic_info>> create_topic(
        api::new_topic spec) override {
        if (!legal_topic_name(spec.name.value)) {
            co_return api::backend_failure(
                api::make_error_code(api::errc::invalid_topic_name),
                fmt::format("'{}' is not a legal topic name", spec.name.value));
        }
        if (spec.partitions < 1) {
            co_return api::backend_failure(api::make_error_code(api::errc::invalid_partitions),
                                           "the partition count must be at least 1");
        }
        auto existing = co_await inner_.describe_topic(spec.name);
        if (existing) {
            co_return api::backend_failure(
                api::make_error_code(api::errc::topic_already_exists),
                fmt::format("topic '{}' already exists", spec.name.value));
        }
        if (spec.validate_only) {
            api::topic_info t;
            t.name = spec.name;
            t.internal = spec.name.value.starts_with("__");
            for (std::int32_t p = 0; p < spec.partitions; ++p) {
                t.partitions.push_back(api::partition_info{partition_id(p), -1, {}, {}});
            }
            co_return t;
        }
        if (!shared_mock_cluster().create_topic(spec.name.value, spec.partitions)) {
            co_return api::backend_failure(api::make_error_code(api::errc::unknown),
                                           "the mock cluster refused the topic");
        }
        co_return co_await inner_.describe_topic(spec.name);
    }

    api::awaitable<api::backend_result<api::cluster_info>> describe_cluster() override {
        return inner_.describe_cluster();
    }
    api::awaitable<api::backend_result<std::vector<api::topic_info>>> list_topics() override {
        return inner_.list_topics();
    }
    api::awaitable<api::backend_result<api::topic_info>> describe_topic(topic_name name) override {
        return inner_.describe_topic(std::move(name));
    }
    api::awaitable<api::backend_result<void>> delete_topic(topic_name name) override {
        return inner_.delete_topic(std::move(name));
    }
    api::awaitable<api::backend_result<void>> create_partitions(topic_name name,
                                                                std::int32_t total) override {
        return inner_.create_partitions(std::move(name), total);
    }
    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_topic_configs(
        topic_name name) override {
        return inner_.describe_topic_configs(std::move(name));
    }
    api::awaitable<api::backend_result<void>> alter_topic_configs(
        topic_name name, std::vector<api::config_change> changes, bool validate_only) override {
        return inner_.alter_topic_configs(std::move(name), std::move(changes), validate_only);
    }
    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_broker_configs(
        std::int32_t node_id) override {
        return inner_.describe_broker_configs(node_id);
    }
    api::awaitable<std::vector<api::found_offset>> list_offsets(
        std::vector<api::offset_query> queries, api::isolation isolation) override {
        return inner_.list_offsets(std::move(queries), isolation);
    }
    api::awaitable<std::vector<api::backend_result<offset>>> delete_records(
        std::vector<api::delete_records_request> reqs) override {
        return inner_.delete_records(std::move(reqs));
    }
    api::awaitable<api::backend_result<std::vector<api::listed_group>>> list_groups() override {
        return inner_.list_groups();
    }
    api::awaitable<api::backend_result<api::group_view>> describe_group(group_id id) override {
        return inner_.describe_group(std::move(id));
    }
    api::awaitable<api::backend_result<void>> delete_group(group_id id) override {
        return inner_.delete_group(std::move(id));
    }
    api::awaitable<api::backend_result<std::vector<api::committed_offset>>> committed_offsets(
        group_id id, std::vector<api::topic_partition> parts) override {
        return inner_.committed_offsets(std::move(id), std::move(parts));
    }
    api::awaitable<api::backend_result<void>> alter_committed_offsets(
        group_id id, std::vector<api::offset_commit> offsets) override {
        return inner_.alter_committed_offsets(std::move(id), std::move(offsets));
    }
    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_cluster_configs()
        override {
        return inner_.describe_cluster_configs();
    }
    api::awaitable<api::backend_result<void>> alter_broker_configs(
        std::optional<std::int32_t> node_id, std::vector<api::config_change> changes,
        bool validate_only) override {
        return inner_.alter_broker_configs(node_id, std::move(changes), validate_only);
    }
    api::awaitable<api::backend_result<api::log_sizes>> describe_log_dirs() override {
        return inner_.describe_log_dirs();
    }
    api::awaitable<api::backend_result<std::vector<api::acl_binding>>> describe_acls(
        api::acl_filter filter) override {
        return inner_.describe_acls(std::move(filter));
    }
    api::awaitable<api::backend_result<void>> create_acls(
        std::vector<api::acl_binding> bindings) override {
        return inner_.create_acls(std::move(bindings));
    }
    api::awaitable<api::backend_result<std::vector<api::acl_binding>>> delete_acls(
        api::acl_filter filter) override {
        return inner_.delete_acls(std::move(filter));
    }

private:
    api::admin& inner_;
};

/// The upstream client level with the mock-backed admin.
class mock_backed_client final : public api::client {
public:
    explicit mock_backed_client(std::unique_ptr<api::client> inner)
        : inner_(std::move(inner)), admin_(inner_->admin()) {}

    api::producer& producer() override { return inner_->producer(); }
    std::shared_ptr<api::consumer> open_consumer(api::consumer_options opts,
                                                 boost::asio::any_io_executor ex) override {
        return inner_->open_consumer(std::move(opts), std::move(ex));
    }
    api::admin& admin() override { return admin_; }
    health check() const override { return inner_->check(); }
    stats statistics() const override { return inner_->statistics(); }

private:
    std::unique_ptr<api::client> inner_;
    mock_backed_admin admin_;
};

class upstream_client final : public client_under_test {
public:
    upstream_client() {
        upstream::upstream_options opts;
        opts.properties = {{"bootstrap.servers", shared_mock_cluster().bootstrap()},
                           {"heartbeat.interval.ms", "300"}};
        opts.request_timeout = std::chrono::seconds(5);
        client_ =
            std::make_unique<mock_backed_client>(upstream::make_upstream_client(std::move(opts)));
    }

    api::client& client() override { return *client_; }
    void start(boost::asio::any_io_executor) override {}
    void stop() override {}

private:
    std::unique_ptr<api::client> client_;
};

}  // namespace

std::string_view upstream_client_factory::lacks(std::string_view feature) {
    static const std::map<std::string_view, std::string_view> reasons = {
        {"topic_configs",
         "the librdkafka 2.0.2 mock has no CreateTopics, DescribeConfigs or AlterConfigs: its "
         "topics have no configs"},
        {"delete_topics", "the librdkafka 2.0.2 mock has no DeleteTopics"},
        {"create_partitions", "the librdkafka 2.0.2 mock has no CreatePartitions"},
        {"delete_records", "the librdkafka 2.0.2 mock has no DeleteRecords"},
        {"group_admin",
         "the librdkafka 2.0.2 mock has no ListGroups, DescribeGroups or DeleteGroups (and "
         "librdkafka 2.0.2 hangs in rd_kafka_destroy after a DescribeConsumerGroups it refused)"},
        {"all_committed_offsets",
         "the librdkafka mock's OffsetFetch does not answer every partition of a group"},
        {"offsets_by_timestamp",
         "the librdkafka 2.0.2 mock does not look offsets up by timestamp, and librdkafka "
         "2.0.2's offsets_for_times does not answer the record's timestamp"},
        {"produce_timestamps",
         "the librdkafka 2.0.2 mock answers every Produce with LogAppendTime 1234"},
        {"controller", "the librdkafka 2.0.2 mock names controller 0, which is no broker"},
        {"prompt_rebalance",
         "the librdkafka 2.0.2 mock's rebalance after a LeaveGroup waits session.timeout.ms - "
         "1 s for the remaining members"},
    };
    auto it = reasons.find(feature);
    return it == reasons.end() ? std::string_view() : it->second;
}

std::unique_ptr<client_under_test> upstream_client_factory::open() {
    return std::make_unique<upstream_client>();
}

}  // namespace sluice::backend::contract
