#include "backend/upstream/upstream_client.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "backend/upstream/upstream_admin.h"
#include "backend/upstream/upstream_common.h"
#include "backend/upstream/upstream_consumer.h"
#include "backend/upstream/upstream_monitor.h"
#include "backend/upstream/upstream_producer.h"
#include "backend/upstream/upstream_txn_producer.h"

namespace sluice::backend::upstream {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

/// How often the poller asks for metadata to know the cluster is reachable.
constexpr milliseconds health_probe_interval{5000};
/// Threads for blocking librdkafka calls (metadata, admin requests waited for, offset
/// lookups): each waits on the network, not on a core.
constexpr std::size_t blocking_threads = 4;

std::string property_or(const std::map<std::string, std::string>& props, const std::string& key,
                        std::string fallback) {
    auto it = props.find(key);
    return it == props.end() ? std::move(fallback) : it->second;
}

/// The client level over a Kafka cluster.
///
///   make_upstream_client -> one librdkafka producer handle (idempotent, acks=all):
///        producer (send, partitions), admin (admin API and metadata on the same handle)
///   poller thread: rd_kafka_poll (delivery reports, errors, statistics), health probes
///   thread pool: blocking librdkafka calls, resumed on the callers' executors
///   consumers: one librdkafka consumer each (open_upstream_consumer)
///
/// Lifecycle: built by make_upstream_client (starts connecting at once); the destructor
/// stops the poller, flushes what is queued (bounded), purges the rest (their calls answer
/// with the purge error) and waits for the pool. Concurrency: thread-safe.
class upstream_client final : public api::client {
  public:
    explicit upstream_client(upstream_options opts)
        : opts_(std::move(opts)),
          monitor_(property_or(opts_.properties, "bootstrap.servers", "(no bootstrap.servers)"),
                   health_probe_interval * 3 + opts_.request_timeout),
          pool_(blocking_threads) {
        // Defaults a property may override, then the properties.
        std::map<std::string, std::string> props = {
            {"enable.idempotence", "true"},
            {"acks", "all"},
            // Kafka's Java producer's partitioner for keyed records (murmur2); records
            // without a key get a partition from send() itself.
            {"partitioner", "murmur2_random"},
            // A send to a missing topic fails; asking for its metadata must not create it.
            {"allow.auto.create.topics", "false"},
            {"statistics.interval.ms", "5000"},
            // A send() waits for its records' acknowledgements, so every call pays the linger:
            // librdkafka 2.0.2's 5 ms held 16 REST connections sending 100 records each near
            // 190,000 records/s. 0 wakes the broker thread for every record (twice the CPU per
            // record). On a quiet machine 1 ms gave 412-416k records/s against 307k at 2 ms
            // and 362-370k at 0.5 ms, at the CPU of 2 ms (docs/benchmarks.md, session 38).
            {"linger.ms", "1"},
            {"message.timeout.ms",
             std::to_string(std::max<std::int64_t>(opts_.request_timeout.count(), 1000))},
        };
        for (const auto& [k, v] : opts_.properties) {
            props[k] = v;
        }
        auto conf = make_conf(props);
        rd_kafka_conf_set_opaque(conf.get(), this);
        rd_kafka_conf_set_dr_msg_cb(conf.get(), &upstream_producer::on_delivery);
        rd_kafka_conf_set_error_cb(conf.get(), &upstream_client::on_error);
        rd_kafka_conf_set_stats_cb(conf.get(), &upstream_client::on_stats);
        handle_ = make_handle(RD_KAFKA_PRODUCER, std::move(conf));

        std::int64_t max_age = 300000;  // librdkafka's topic.metadata.refresh.interval.ms
        if (auto it = props.find("topic.metadata.refresh.interval.ms"); it != props.end()) {
            max_age = std::stoll(it->second);  // librdkafka accepted it: an integer
        }
        producer_ = std::make_unique<upstream_producer>(
            handle_.get(), pool_, monitor_, opts_.request_timeout,
            milliseconds(max_age > 0 ? max_age : 300000));
        admin_ = std::make_unique<upstream_admin>(handle_.get(), pool_, monitor_, *producer_,
                                                  opts_.request_timeout, opts_.log_dirs);
        upstream_log().info("upstream {}: producer {} started", props["bootstrap.servers"],
                            rd_kafka_name(handle_.get()));
        poller_ = std::thread([this] { poll_loop(); });
    }

    ~upstream_client() override {
        pool_.start_closing();  // the pool's sliced waits give up (a probe to a dead cluster)
        stopping_.store(true);
        poller_.join();
        rd_kafka_t* rk = handle_.get();
        // What is queued gets a bounded chance to be delivered; the rest is purged, and its
        // reports (served by flush) answer the calls still waiting.
        const int grace =
            static_cast<int>(std::min<std::int64_t>(opts_.request_timeout.count(), 5000));
        if (rd_kafka_flush(rk, grace) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
            rd_kafka_flush(rk, 1000);
        }
        pool_.stop();
        pool_.join();
        admin_.reset();
        producer_.reset();
        handle_.reset();
    }

    api::producer& producer() override { return *producer_; }
    std::shared_ptr<api::consumer> open_consumer(api::consumer_options copts,
                                                 boost::asio::any_io_executor ex) override {
        return open_upstream_consumer(opts_, pool_, std::move(copts), std::move(ex),
                                      monitor_.consumers());
    }
    api::admin& admin() override { return *admin_; }
    std::unique_ptr<api::transactional_producer> open_transactional_producer(
        const std::string& transactional_id) override {
        return make_upstream_txn_producer(opts_.properties, transactional_id);
    }
    health check() const override { return monitor_.check(); }
    void start_closing() override { pool_.start_closing(); }
    stats statistics() const override { return monitor_.statistics(); }

  private:
    static void on_error(rd_kafka_t*, int err, const char* reason, void* opaque) {
        static_cast<upstream_client*>(opaque)->monitor_.on_error(
            static_cast<rd_kafka_resp_err_t>(err), reason);
    }
    static int on_stats(rd_kafka_t*, char* json, size_t len, void* opaque) {
        static_cast<upstream_client*>(opaque)->monitor_.on_statistics("producer", {json, len});
        return 0;  // librdkafka frees the document
    }

    /// The poller thread: serves librdkafka's callbacks (rd_kafka_poll returns as soon as an
    /// event is there; the 100 ms bound is only how soon it notices stopping) and starts a
    /// health probe on the pool every health_probe_interval.
    void poll_loop() {
        auto next_probe = steady_clock::now();
        while (!stopping_.load()) {
            rd_kafka_poll(handle_.get(), 100);
            const auto now = steady_clock::now();
            if (now >= next_probe && !probing_.exchange(true)) {
                next_probe = now + health_probe_interval;
                boost::asio::post(pool_, [this] { probe(); });
            }
        }
    }

    /// A metadata request (brokers only) on the pool: the cluster answers, or why not.
    void probe() {
        in_blocking_pool in_pool(pool_);
        const auto timeout = std::min<milliseconds>(opts_.request_timeout, health_probe_interval);
        auto f = fetch_metadata(handle_.get(), metadata_scope::known, {}, timeout);
        if (f.err) {
            monitor_.probe_failed(rd_kafka_err2str(f.err));
        } else {
            monitor_.probe_succeeded();
        }
        probing_.store(false);
    }

    upstream_options opts_;
    upstream_monitor monitor_;
    blocking_pool pool_;
    handle_ptr handle_;
    std::unique_ptr<upstream_producer> producer_;
    std::unique_ptr<upstream_admin> admin_;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> probing_{false};
    std::thread poller_;
};

}  // namespace

std::unique_ptr<api::client> make_upstream_client(upstream_options opts) {
    return std::make_unique<upstream_client>(std::move(opts));
}

}  // namespace sluice::backend::upstream
