// The queue service's topics and records over the client level (owned by backend/queue): what
// queue_service reads a queue's topic through when the backend is a Kafka cluster (upstream
// mode). Topics map to api::admin; list_offsets to api::admin; fetch to api::consumer
// (assign, seek, poll) with the polled records rebuilt as record batches, so that the service
// decodes them as it decodes the native backend's. Produce is not served here: the service
// produces through api::producer (queue_append.h) when it is given one.
//
//   queue_service ──api::topics──>  client_topics  ──api::admin──────┐
//                 ──api::records─>  client_records ──api::consumer───┼──> api::client
//                 ──api::producer────────────────────────────────────┘    (backend/upstream)
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "backend/api/client.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"

namespace sluice::backend::queue {

/// api::topics over api::admin: describe, list, create, remove, partitions and configs. The
/// broker-level extras (dynamic broker configs, partition states, storage) answer nothing or
/// `unsupported`. describe() retries a cluster it cannot reach for up to `patience` and then
/// throws std::runtime_error rather than answer "no such topic" (which would end the queue).
/// Thread-safe (the admin is).
class client_topics final : public api::topics {
public:
    explicit client_topics(api::admin& admin,
                           std::chrono::milliseconds patience = std::chrono::seconds(30))
        : admin_(admin), patience_(patience) {}

    api::awaitable<std::optional<api::topic_description>> describe(topic_name name) override;
    api::awaitable<std::optional<api::topic_description>> describe(uuid id) override;
    api::awaitable<std::vector<api::topic_description>> list() override;
    api::awaitable<api::backend_result<api::created_topic>> create(api::new_topic spec) override;
    api::awaitable<api::backend_result<void>> remove(topic_name name) override;
    api::awaitable<api::backend_result<void>> create_partitions(topic_name name,
                                                                std::int32_t total,
                                                                bool validate_only) override;
    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_configs(
        topic_name name) override;
    api::awaitable<api::backend_result<void>> replace_configs(
        topic_name name, std::map<std::string, std::string> configs, bool validate_only) override;
    api::awaitable<api::backend_result<void>> alter_configs(
        topic_name name, std::vector<api::config_change> changes, bool validate_only) override;
    std::vector<api::config_entry> backend_configs() const override { return {}; }
    std::vector<std::string> dynamic_config_names() const override { return {}; }
    api::backend_result<void> set_dynamic_configs(api::dynamic_broker_configs configs,
                                                  bool validate_only) override;
    api::awaitable<void> apply_dynamic_configs() override { co_return; }
    std::vector<api::partition_state> partition_states() const override { return {}; }
    api::awaitable<api::storage_description> describe_storage(
        std::vector<topic_name> topics) override;

private:
    api::admin& admin_;
    std::chrono::milliseconds patience_;
};

/// api::records over api::consumer and api::admin, for the queue service's reads.
///
/// fetch(): a pool of consumers without a group (read_committed, reset none), one set per
/// topic and partition list, each assigned once; a call takes an idle one (or opens one),
/// seeks it where the request asks (only where its position differs: the tailer's next fetch
/// continues where the last ended, keeping librdkafka's prefetch), polls with the request's
/// bounds and gives it back. A point read (max_wait 0) waits up to `point_read_wait` for the
/// record to arrive. The records are rebuilt as v2 batches (one per run of consecutive
/// offsets; an empty commit marker stands for offsets the consumer skipped, such as
/// transaction markers, so that the next fetch starts past them).
/// Lifecycle: the consumers' background work runs on a private io thread, started by the
/// constructor. stop() (after the queue service's) closes every consumer, which ends the polls
/// in progress, and waits (bounded) until no fetch runs: call it while the callers' executors
/// still run. Fetches after it answer backend_unavailable. The destructor stops, waits for the
/// consumers' close and stops the thread.
/// Concurrency: thread-safe; a pooled consumer is used by one call at a time.
class client_records final : public api::records {
public:
    explicit client_records(api::client& client,
                            std::chrono::milliseconds point_read_wait = std::chrono::seconds(2));
    ~client_records() override;
    client_records(const client_records&) = delete;
    client_records& operator=(const client_records&) = delete;

    /// Not served: the queue service produces through api::producer. Answers `unsupported`.
    api::awaitable<api::produce_result> produce(api::produce_request req) override;
    api::awaitable<api::fetch_result> fetch(api::fetch_request req) override;
    api::awaitable<std::vector<api::found_offset>> list_offsets(
        std::vector<api::offset_query> queries, api::isolation isolation) override;
    api::awaitable<std::vector<api::backend_result<offset>>> delete_records(
        std::vector<api::delete_records_request> reqs) override;
    std::int64_t parked_fetches() const override { return 0; }

    void stop();

private:
    using consumer_ptr = std::shared_ptr<api::consumer>;
    consumer_ptr take(const std::string& key, const api::fetch_topic& ft);
    void give_back(const std::string& key, consumer_ptr c);

    api::client& client_;
    std::chrono::milliseconds point_read_wait_;
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    std::thread thread_;
    std::mutex mu_;
    std::map<std::string, std::vector<consumer_ptr>> idle_;  // by topic and partition list
    std::vector<std::weak_ptr<api::consumer>> opened_;
    bool stopped_ = false;
    std::int64_t active_ = 0;  // fetches running
    std::condition_variable idle_cv_;
};

}  // namespace sluice::backend::queue
