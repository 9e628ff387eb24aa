#include "backend/upstream/upstream_client.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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
///   make_upstream_client -> upstream.producer.instances librdkafka producer handles
///        (idempotent, acks=all): producer (send, partitions), admin (admin API and metadata
///        on the first handle)
///   a poller thread per handle: rd_kafka_poll (delivery reports, errors, statistics); the
///        first handle's also starts the health probes
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
        const std::size_t instances = std::max<std::size_t>(opts_.producer_instances, 1);
        std::vector<rd_kafka_t*> handles;
        for (std::size_t i = 0; i < instances; ++i) {
            auto one = std::make_unique<producer_handle>();
            one->client = this;
            one->stats_id = monitor_.producers().add();
            auto conf = make_conf(props);
            rd_kafka_conf_set_opaque(conf.get(), one.get());
            rd_kafka_conf_set_dr_msg_cb(conf.get(), &upstream_producer::on_delivery);
            rd_kafka_conf_set_error_cb(conf.get(), &upstream_client::on_error);
            rd_kafka_conf_set_stats_cb(conf.get(), &upstream_client::on_stats);
            one->handle = make_handle(RD_KAFKA_PRODUCER, std::move(conf));
            handles.push_back(one->handle.get());
            producers_.push_back(std::move(one));
        }

        std::int64_t max_age = 300000;  // librdkafka's topic.metadata.refresh.interval.ms
        if (auto it = props.find("topic.metadata.refresh.interval.ms"); it != props.end()) {
            max_age = std::stoll(it->second);  // librdkafka accepted it: an integer
        }
        producer_ = std::make_unique<upstream_producer>(
            std::move(handles), pool_, monitor_, opts_.request_timeout,
            milliseconds(max_age > 0 ? max_age : 300000));
        admin_ = std::make_unique<upstream_admin>(main_handle(), pool_, monitor_, *producer_,
                                                  opts_.request_timeout, opts_.log_dirs);
        upstream_log().info("upstream {}: {} producer handle(s) started ({} first)",
                            props["bootstrap.servers"], producers_.size(),
                            rd_kafka_name(main_handle()));
        for (auto& p : producers_) {
            p->poller = std::thread([this, rk = p->handle.get(), probes = p == producers_.front()] {
                poll_loop(rk, probes);
            });
        }
    }

    ~upstream_client() override {
        pool_.start_closing();  // the pool's sliced waits give up (a probe to a dead cluster)
        stopping_.store(true);
        for (auto& p : producers_) {
            p->poller.join();
        }
        // What is queued gets a bounded chance to be delivered (one bound for all handles);
        // the rest is purged, and its reports (served by flush) answer the calls still
        // waiting.
        const auto grace =
            milliseconds(std::min<std::int64_t>(opts_.request_timeout.count(), 5000));
        const auto flush_until = steady_clock::now() + grace;
        for (auto& p : producers_) {
            rd_kafka_t* rk = p->handle.get();
            const auto left = std::chrono::duration_cast<milliseconds>(flush_until -
                                                                       steady_clock::now());
            if (rd_kafka_flush(rk, static_cast<int>(std::max<std::int64_t>(left.count(), 0))) !=
                RD_KAFKA_RESP_ERR_NO_ERROR) {
                rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
                rd_kafka_flush(rk, 1000);
            }
        }
        pool_.stop();
        pool_.join();
        admin_.reset();
        producer_.reset();
        for (auto& p : producers_) {
            p->handle.reset();
            monitor_.producers().closed(p->stats_id);
        }
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
    /// One producer handle of the pool, its poller thread and where its statistics go (the
    /// handle's librdkafka opaque).
    struct producer_handle {
        upstream_client* client = nullptr;
        std::uint64_t stats_id = 0;
        handle_ptr handle;
        std::thread poller;
    };

    /// The first producer handle: metadata, the admin API and the health probes.
    rd_kafka_t* main_handle() const { return producers_.front()->handle.get(); }

    static void on_error(rd_kafka_t*, int err, const char* reason, void* opaque) {
        static_cast<producer_handle*>(opaque)->client->monitor_.on_error(
            static_cast<rd_kafka_resp_err_t>(err), reason);
    }
    static int on_stats(rd_kafka_t*, char* json, size_t len, void* opaque) {
        auto* p = static_cast<producer_handle*>(opaque);
        p->client->monitor_.producers().on_statistics(p->stats_id, {json, len});
        return 0;  // librdkafka frees the document
    }

    /// A poller thread, one per producer handle: serves librdkafka's callbacks (rd_kafka_poll
    /// returns as soon as an event is there; the 100 ms bound is only how soon it notices
    /// stopping); the first handle's (`probes`) also starts a health probe on the pool every
    /// health_probe_interval.
    void poll_loop(rd_kafka_t* rk, bool probes) {
        auto next_probe = steady_clock::now();
        while (!stopping_.load()) {
            rd_kafka_poll(rk, 100);
            if (!probes) {
                continue;
            }
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
        auto f = fetch_metadata(main_handle(), metadata_scope::known, {}, timeout);
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
    std::vector<std::unique_ptr<producer_handle>> producers_;  // upstream.producer.instances
    std::unique_ptr<upstream_producer> producer_;
    std::unique_ptr<upstream_admin> admin_;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> probing_{false};
};

}  // namespace

std::unique_ptr<api::client> make_upstream_client(upstream_options opts) {
    return std::make_unique<upstream_client>(std::move(opts));
}

}  // namespace sluice::backend::upstream
