// Kafka load generator on librdkafka's C API: produce, consume and end-to-end latency scenarios
// against any broker (sluice) or against librdkafka's in-process mock cluster (--mock), so that
// scripts/run-bench can compare both in the same run. Not a Google Benchmark.
//
// Modes (see usage()):
//   produce   N records of S bytes, acks 1 or all; records/s, MB/s, delivery latency
//   consume   N records from the beginning of every partition (assign); records/s, MB/s
//   latency   a steady rate R for D seconds while a consumer in the same process reads them;
//             end-to-end latency from a send timestamp carried in each payload
//   create    T topics of P partitions each through CreateTopics (footprint measurements)
//
// Output: one JSON object per result on a line of its own on stdout, then a human line that
// starts with '#'. Every loop is bounded by a count and by --timeout.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using steady = std::chrono::steady_clock;

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               steady::now().time_since_epoch())
        .count();
}

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "kafka_load: %s\n", what.c_str());
    std::exit(1);
}

using property = std::pair<std::string, std::string>;

struct options {
    std::string mode;
    std::string bootstrap;
    bool mock = false;
    std::string label;
    std::string topic = "bench";
    int partitions = 1;
    int topics = 1;  // create mode: topics named <topic>-<i>
    int producers = 1;  // produce mode: client instances, each in its own thread
    std::int64_t records = 1'000'000;
    std::size_t size = 100;
    std::string acks = "1";
    double rate = 50'000;
    double duration_s = 10;
    double warmup_s = 1;
    double timeout_s = 120;
    bool create = false;
    bool prefill = false;
    std::vector<property> common;
    std::vector<property> producer;
    std::vector<property> consumer;
};

void usage() {
    std::fputs(
        "usage: kafka_load MODE (--bootstrap HOST:PORT | --mock) [options]\n"
        "modes: produce | consume | latency | create\n"
        "  --topic NAME          topic (create: prefix of <NAME>-<i>)      [bench]\n"
        "  --partitions P        partitions when creating                  [1]\n"
        "  --topics T            create mode: number of topics             [1]\n"
        "  --create              create the topic first (CreateTopics; mock: in the mock)\n"
        "  --records N           records to produce or consume             [1000000]\n"
        "  --size S              record value bytes                        [100]\n"
        "  --acks 1|all|0        producer acks                             [1]\n"
        "  --rate R              latency mode: records/s                   [50000]\n"
        "  --duration D          latency mode: measured seconds            [10]\n"
        "  --warmup W            latency mode: unmeasured seconds first    [1]\n"
        "  --producers N         produce mode: N clients in N threads       [1]\n"
        "  --prefill             consume mode: produce N records first, spread evenly over\n"
        "                        the partitions (not timed)\n"
        "  --timeout SECONDS     bound on every phase                      [120]\n"
        "  --label NAME          target name in the output                 [sluice|mock]\n"
        "  --set K=V             librdkafka property for every client (repeatable)\n"
        "  --producer-set K=V    producer-only property (repeatable)\n"
        "  --consumer-set K=V    consumer-only property (repeatable)\n",
        stderr);
}

property split_property(const std::string& kv) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
        die("expected KEY=VALUE, got '" + kv + "'");
    }
    return {kv.substr(0, eq), kv.substr(eq + 1)};
}

options parse_args(int argc, char** argv) {
    options o;
    if (argc < 2) {
        usage();
        std::exit(2);
    }
    o.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                die(a + " needs a value");
            }
            return argv[++i];
        };
        if (a == "--bootstrap") {
            o.bootstrap = value();
        } else if (a == "--mock") {
            o.mock = true;
        } else if (a == "--label") {
            o.label = value();
        } else if (a == "--topic") {
            o.topic = value();
        } else if (a == "--producers") {
            o.producers = std::stoi(value());
        } else if (a == "--partitions") {
            o.partitions = std::stoi(value());
        } else if (a == "--topics") {
            o.topics = std::stoi(value());
        } else if (a == "--records") {
            o.records = std::stoll(value());
        } else if (a == "--size") {
            o.size = std::stoul(value());
        } else if (a == "--acks") {
            o.acks = value();
        } else if (a == "--rate") {
            o.rate = std::stod(value());
        } else if (a == "--duration") {
            o.duration_s = std::stod(value());
        } else if (a == "--warmup") {
            o.warmup_s = std::stod(value());
        } else if (a == "--timeout") {
            o.timeout_s = std::stod(value());
        } else if (a == "--create") {
            o.create = true;
        } else if (a == "--prefill") {
            o.prefill = true;
        } else if (a == "--set") {
            o.common.push_back(split_property(value()));
        } else if (a == "--producer-set") {
            o.producer.push_back(split_property(value()));
        } else if (a == "--consumer-set") {
            o.consumer.push_back(split_property(value()));
        } else if (a == "-h" || a == "--help") {
            usage();
            std::exit(0);
        } else {
            usage();
            die("unknown argument " + a);
        }
    }
    if (o.mode != "produce" && o.mode != "consume" && o.mode != "latency" && o.mode != "create") {
        usage();
        die("unknown mode " + o.mode);
    }
    if (o.mock == !o.bootstrap.empty()) {
        die("give exactly one of --bootstrap and --mock");
    }
    if (o.partitions < 1 || o.topics < 1 || o.records < 1 || o.rate <= 0 || o.timeout_s <= 0) {
        die("--partitions, --topics, --records, --rate and --timeout must be positive");
    }
    if (o.mode == "latency" && o.size < 24) {
        die("latency mode needs --size of at least 24 (nonce, sequence, timestamp)");
    }
    if (o.label.empty()) {
        o.label = o.mock ? "mock" : "sluice";
    }
    return o;
}

// --- librdkafka handles ------------------------------------------------------------------

void set(rd_kafka_conf_t* conf, const std::string& k, const std::string& v) {
    char err[512];
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
        die("config " + k + "=" + v + ": " + err);
    }
}

rd_kafka_t* make_client(rd_kafka_type_t type, rd_kafka_conf_t* conf) {
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
    if (rk == nullptr) {
        die(std::string("rd_kafka_new: ") + err);
    }
    return rk;
}

/// The cluster under test: a bootstrap address, or an in-process mock cluster that lives as
/// long as this object (its helper handle owns the mock's threads).
class target {
public:
    explicit target(const options& o) {
        if (!o.mock) {
            bootstrap_ = o.bootstrap;
            return;
        }
        rd_kafka_conf_t* conf = rd_kafka_conf_new();
        set(conf, "log_level", "3");
        helper_ = make_client(RD_KAFKA_PRODUCER, conf);
        mock_ = rd_kafka_mock_cluster_new(helper_, 1);
        if (mock_ == nullptr) {
            die("rd_kafka_mock_cluster_new failed");
        }
        bootstrap_ = rd_kafka_mock_cluster_bootstraps(mock_);
    }
    ~target() {
        if (mock_ != nullptr) {
            rd_kafka_mock_cluster_destroy(mock_);
        }
        if (helper_ != nullptr) {
            rd_kafka_destroy(helper_);
        }
    }
    target(const target&) = delete;
    target& operator=(const target&) = delete;

    const std::string& bootstrap() const { return bootstrap_; }
    rd_kafka_mock_cluster_t* mock() const { return mock_; }

private:
    std::string bootstrap_;
    rd_kafka_t* helper_ = nullptr;
    rd_kafka_mock_cluster_t* mock_ = nullptr;
};

rd_kafka_conf_t* base_conf(const options& o, const target& t) {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    set(conf, "bootstrap.servers", t.bootstrap());
    set(conf, "client.id", "kafka_load");
    for (const auto& [k, v] : o.common) {
        set(conf, k, v);
    }
    return conf;
}

rd_kafka_conf_t* producer_conf(const options& o, const target& t) {
    rd_kafka_conf_t* conf = base_conf(o, t);
    set(conf, "acks", o.acks);
    for (const auto& [k, v] : o.producer) {
        set(conf, k, v);
    }
    return conf;
}

rd_kafka_t* make_consumer(const options& o, const target& t) {
    rd_kafka_conf_t* conf = base_conf(o, t);
    // assign() needs a group handle; nothing is committed and no group is joined.
    set(conf, "group.id", "kafka-load");
    set(conf, "enable.auto.commit", "false");
    set(conf, "enable.auto.offset.store", "false");
    set(conf, "enable.partition.eof", "false");
    set(conf, "auto.offset.reset", "earliest");
    for (const auto& [k, v] : o.consumer) {
        set(conf, k, v);
    }
    rd_kafka_t* rk = make_client(RD_KAFKA_CONSUMER, conf);
    rd_kafka_poll_set_consumer(rk);
    return rk;
}

double seconds_left(std::int64_t deadline_ns) {
    return static_cast<double>(deadline_ns - now_ns()) / 1e9;
}

/// Partition count of `topic` from a metadata request (which also opens the connection to the
/// broker before any timed phase starts). Retries until the topic shows up or the deadline.
int partition_count(rd_kafka_t* rk, const std::string& topic, std::int64_t deadline_ns) {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    int count = 0;
    while (count == 0 && seconds_left(deadline_ns) > 0) {
        const rd_kafka_metadata_t* md = nullptr;
        if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                count = md->topics[0].partition_cnt;
            }
            rd_kafka_metadata_destroy(md);
        }
        if (count == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    rd_kafka_topic_destroy(rkt);
    if (count == 0) {
        die("topic " + topic + " not found in metadata");
    }
    return count;
}

/// Creates topics (names[i], partitions each) through the Admin API, or in the mock cluster.
/// An existing topic is fine. Sends at most `per_request` topics per CreateTopics request.
void create_topics(const options& o, const target& t, const std::vector<std::string>& names,
                   int partitions, std::int64_t deadline_ns) {
    if (t.mock() != nullptr) {
        for (const auto& name : names) {
            auto err = rd_kafka_mock_topic_create(t.mock(), name.c_str(), partitions, 1);
            if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                die("mock topic create " + name + ": " + rd_kafka_err2str(err));
            }
        }
        return;
    }
    rd_kafka_t* rk = make_client(RD_KAFKA_PRODUCER, base_conf(o, t));
    rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
    constexpr std::size_t per_request = 10;
    char err[512];
    for (std::size_t first = 0; first < names.size(); first += per_request) {
        const std::size_t n = std::min(per_request, names.size() - first);
        std::vector<rd_kafka_NewTopic_t*> topics;
        for (std::size_t i = 0; i < n; ++i) {
            auto* nt = rd_kafka_NewTopic_new(names[first + i].c_str(), partitions, 1, err,
                                             sizeof err);
            if (nt == nullptr) {
                die(std::string("NewTopic: ") + err);
            }
            topics.push_back(nt);
        }
        rd_kafka_AdminOptions_t* ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
        const int timeout_ms = std::max(1000, static_cast<int>(seconds_left(deadline_ns) * 1000));
        rd_kafka_AdminOptions_set_request_timeout(ao, timeout_ms, err, sizeof err);
        rd_kafka_AdminOptions_set_operation_timeout(ao, timeout_ms, err, sizeof err);
        rd_kafka_CreateTopics(rk, topics.data(), topics.size(), ao, q);
        rd_kafka_event_t* ev = rd_kafka_queue_poll(q, timeout_ms + 1000);
        if (ev == nullptr) {
            die("CreateTopics timed out");
        }
        if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            die(std::string("CreateTopics: ") + rd_kafka_event_error_string(ev));
        }
        const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev);
        std::size_t cnt = 0;
        const rd_kafka_topic_result_t** results = rd_kafka_CreateTopics_result_topics(res, &cnt);
        for (std::size_t i = 0; i < cnt; ++i) {
            auto e = rd_kafka_topic_result_error(results[i]);
            if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                die(std::string("CreateTopics ") + rd_kafka_topic_result_name(results[i]) + ": " +
                    rd_kafka_err2str(e));
            }
        }
        rd_kafka_event_destroy(ev);
        rd_kafka_AdminOptions_destroy(ao);
        rd_kafka_NewTopic_destroy_array(topics.data(), topics.size());
        if (seconds_left(deadline_ns) <= 0) {
            die("create: timed out");
        }
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

// --- results -----------------------------------------------------------------------------

/// q-quantile (nearest rank) of sorted values, in the values' unit; 0 when empty.
double quantile(const std::vector<std::int64_t>& sorted, double q) {
    if (sorted.empty()) {
        return 0;
    }
    auto rank = static_cast<std::size_t>(q * static_cast<double>(sorted.size()) + 0.999999);
    rank = std::clamp<std::size_t>(rank, 1, sorted.size());
    return static_cast<double>(sorted[rank - 1]);
}

struct latency_summary {
    double p50_ms = 0, p99_ms = 0, p999_ms = 0, max_ms = 0;
};

latency_summary summarize(std::vector<std::int64_t>& ns) {
    std::sort(ns.begin(), ns.end());
    latency_summary s;
    s.p50_ms = quantile(ns, 0.50) / 1e6;
    s.p99_ms = quantile(ns, 0.99) / 1e6;
    s.p999_ms = quantile(ns, 0.999) / 1e6;
    s.max_ms = ns.empty() ? 0 : static_cast<double>(ns.back()) / 1e6;
    return s;
}

void print_throughput(const options& o, const char* mode, std::int64_t records,
                      std::int64_t errors, double seconds, bool complete,
                      const latency_summary* lat) {
    const double rps = seconds > 0 ? static_cast<double>(records) / seconds : 0;
    const double mbps = rps * static_cast<double>(o.size) / 1e6;
    std::printf("{\"mode\":\"%s\",\"target\":\"%s\",\"acks\":\"%s\",\"partitions\":%d,"
                "\"size\":%zu,\"records\":%" PRId64 ",\"errors\":%" PRId64
                ",\"seconds\":%.4f,\"records_per_s\":%.0f,\"mb_per_s\":%.2f,\"complete\":%s",
                mode, o.label.c_str(), o.acks.c_str(), o.partitions, o.size, records, errors,
                seconds, rps, mbps, complete ? "true" : "false");
    if (lat != nullptr) {
        std::printf(",\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f",
                    lat->p50_ms, lat->p99_ms, lat->p999_ms, lat->max_ms);
    }
    std::printf("}\n# %-8s %-7s acks=%-3s %8" PRId64 " x %zu B in %.2f s: %10.0f rec/s %8.2f MB/s",
                mode, o.label.c_str(), o.acks.c_str(), records, o.size, seconds, rps, mbps);
    if (lat != nullptr) {
        std::printf("  delivery p50 %.2f p99 %.2f p99.9 %.2f ms", lat->p50_ms, lat->p99_ms,
                    lat->p999_ms);
    }
    if (errors > 0 || !complete) {
        std::printf("  (%" PRId64 " errors%s)", errors, complete ? "" : ", INCOMPLETE");
    }
    std::printf("\n");
    std::fflush(stdout);
}

// --- produce -----------------------------------------------------------------------------

struct produce_state {
    std::vector<std::int64_t> latency_ns;  // in delivery order
    std::int64_t delivered = 0;
    std::int64_t failed = 0;
    std::int64_t last_delivery_ns = 0;
    rd_kafka_resp_err_t first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
};

/// Delivery latency is librdkafka's own: from the produce() call (its enqueue timestamp) to
/// this report, so the send loop reads no clock per record.
void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* st = static_cast<produce_state*>(opaque);
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (st->failed++ == 0) {
            st->first_error = m->err;
        }
        return;
    }
    const std::int64_t us = rd_kafka_message_latency(m);
    if (us >= 0) {
        st->latency_ns.push_back(us * 1000);
    }
    ++st->delivered;
}

struct produce_outcome {
    std::int64_t delivered = 0;
    std::int64_t failed = 0;
    double seconds = 0;
    bool complete = false;
    std::vector<std::int64_t> latency_ns;
};

/// Produces `records` records of `size` bytes to `topic` with librdkafka's batching and waits for
/// every delivery. Partitions: the keyless sticky partitioner, or with `round_robin` record i
/// goes to partition i % count (even spread, for consume prefill).
produce_outcome produce_records(const options& o, const target& t, std::int64_t deadline_ns,
                                bool round_robin = false, std::latch* start_together = nullptr) {
    produce_state st;
    st.latency_ns.reserve(static_cast<std::size_t>(o.records));
    rd_kafka_conf_t* conf = producer_conf(o, t);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, &st);
    rd_kafka_t* rk = make_client(RD_KAFKA_PRODUCER, conf);
    // Connect and learn the leader before timing.
    const int parts = partition_count(rk, o.topic, deadline_ns);
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, o.topic.c_str(), nullptr);

    std::string payload(o.size, '\0');
    for (std::size_t i = 0; i < payload.size(); ++i) {
        payload[i] = static_cast<char>('a' + i % 26);
    }
    if (start_together != nullptr) {
        start_together->arrive_and_wait();
    }
    const std::int64_t start = now_ns();
    std::int64_t produced = 0;
    bool timed_out = false;
    while (produced < o.records && !timed_out) {
        const auto partition = round_robin ? static_cast<std::int32_t>(produced % parts)
                                           : RD_KAFKA_PARTITION_UA;
        if (rd_kafka_produce(rkt, partition, RD_KAFKA_MSG_F_COPY, payload.data(),
                             payload.size(), nullptr, 0, nullptr) == 0) {
            ++produced;
            if ((produced & 1023) == 0) {
                rd_kafka_poll(rk, 0);
                timed_out = now_ns() > deadline_ns;
            }
            continue;
        }
        const auto err = rd_kafka_last_error();
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            die(std::string("produce: ") + rd_kafka_err2str(err));
        }
        rd_kafka_poll(rk, 1);  // the local queue is full: serve delivery reports
        timed_out = now_ns() > deadline_ns;
    }
    while (st.delivered + st.failed < produced && now_ns() < deadline_ns) {
        rd_kafka_poll(rk, 10);
    }
    st.last_delivery_ns = now_ns();  // poll() returns as soon as it served the last report
    produce_outcome out;
    out.delivered = st.delivered;
    out.failed = st.failed + (produced - st.delivered - st.failed);
    out.seconds = static_cast<double>(std::max(st.last_delivery_ns, start + 1) - start) / 1e9;
    out.complete = st.delivered == o.records;
    out.latency_ns = std::move(st.latency_ns);
    if (st.failed > 0) {
        std::fprintf(stderr, "kafka_load: %" PRId64 " deliveries failed, first: %s\n", st.failed,
                     rd_kafka_err2str(st.first_error));
    }
    rd_kafka_topic_destroy(rkt);
    rd_kafka_flush(rk, 1000);
    rd_kafka_destroy(rk);
    return out;
}

/// --producers N: N client instances in N threads share the records and start together; the
/// run lasts until the last one has every delivery report.
produce_outcome produce_parallel(const options& o, const target& t, std::int64_t deadline_ns) {
    if (o.producers <= 1) {
        return produce_records(o, t, deadline_ns);
    }
    const auto n = static_cast<std::size_t>(o.producers);
    std::vector<produce_outcome> outcomes(n);
    std::latch start_together(static_cast<std::ptrdiff_t>(n));
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            options share = o;
            share.records = o.records / o.producers + (i == 0 ? o.records % o.producers : 0);
            outcomes[i] = produce_records(share, t, deadline_ns, false, &start_together);
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    produce_outcome all;
    all.complete = true;
    for (auto& r : outcomes) {
        all.delivered += r.delivered;
        all.failed += r.failed;
        all.seconds = std::max(all.seconds, r.seconds);
        all.complete = all.complete && r.complete;
        all.latency_ns.insert(all.latency_ns.end(), r.latency_ns.begin(), r.latency_ns.end());
    }
    return all;
}

// --- consume -----------------------------------------------------------------------------

rd_kafka_topic_partition_list_t* all_partitions(const std::string& topic, int count,
                                                std::int64_t start_offset) {
    auto* list = rd_kafka_topic_partition_list_new(count);
    for (int p = 0; p < count; ++p) {
        rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = start_offset;
    }
    return list;
}

void assign_or_die(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* list) {
    auto err = rd_kafka_assign(rk, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        die(std::string("assign: ") + rd_kafka_err2str(err));
    }
}

/// Reads `records` records from the beginning of every partition. A log that holds fewer (the
/// mock cluster keeps only the last few MB of each partition) is read again from its start:
/// each pass seeks the partition back when it reports its end, and the passes are counted.
void run_consume(const options& o, const target& t, std::int64_t deadline_ns) {
    if (o.prefill) {
        auto fill = produce_records(o, t, deadline_ns, true);
        if (!fill.complete) {
            die("prefill did not complete");
        }
    }
    options copt = o;
    copt.consumer.emplace_back("enable.partition.eof", "true");
    rd_kafka_t* rk = make_consumer(copt, t);
    const int parts = partition_count(rk, o.topic, deadline_ns);
    std::vector<std::int64_t> low(static_cast<std::size_t>(parts), 0);
    std::int64_t stored = 0;
    for (int p = 0; p < parts; ++p) {
        std::int64_t lo = 0, hi = 0;
        auto err = rd_kafka_query_watermark_offsets(rk, o.topic.c_str(), p, &lo, &hi, 5000);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            die(std::string("watermarks: ") + rd_kafka_err2str(err));
        }
        low[static_cast<std::size_t>(p)] = lo;
        stored += hi - lo;
    }
    if (stored == 0) {
        die("consume: topic " + o.topic + " is empty");
    }
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, o.topic.c_str(), nullptr);
    const std::int64_t start = now_ns();
    assign_or_die(rk, all_partitions(o.topic, parts, RD_KAFKA_OFFSET_BEGINNING));
    std::int64_t got = 0, errors = 0, rewinds = 0, last = start;
    while (got < o.records && now_ns() < deadline_ns) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
        if (m == nullptr) {
            continue;
        }
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (++got == o.records) {
                last = now_ns();  // not per record: the clock read would be a visible cost
            }
        } else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            const auto p = static_cast<std::size_t>(m->partition);
            if (stored < o.records && p < low.size()) {
                rd_kafka_seek(rkt, m->partition, low[p], 0);
                ++rewinds;
            }
        } else if (errors++ == 0) {
            std::fprintf(stderr, "kafka_load: consume: %s\n", rd_kafka_message_errstr(m));
        }
        rd_kafka_message_destroy(m);
    }
    if (got < o.records) {
        last = now_ns();
    }
    const double seconds = static_cast<double>(last - start) / 1e9;
    copt.partitions = parts;
    print_throughput(copt, "consume", got, errors, seconds, got >= o.records, nullptr);
    std::printf("# consume  %-7s %" PRId64 " records stored, %" PRId64
                " rewinds to the log start\n",
                o.label.c_str(), stored, rewinds);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

// --- latency -----------------------------------------------------------------------------

// Payload layout for latency mode: u64 run nonce, u64 sequence, i64 send time (steady ns),
// then filler up to --size. Native byte order: producer and consumer share the process.
struct stamp {
    std::uint64_t nonce;
    std::uint64_t seq;
    std::int64_t sent_ns;
};

struct latency_consumer {
    std::uint64_t nonce = 0;
    // Records sent before this are warm-up; set by the producer when it starts.
    std::atomic<std::int64_t> measure_from_ns{std::numeric_limits<std::int64_t>::max()};
    std::atomic<std::int64_t> produced{-1};  // set by the producer when it is done
    std::atomic<std::int64_t> drain_until_ns{std::numeric_limits<std::int64_t>::max()};
    std::atomic<std::int64_t> received{0};
    std::atomic<bool> ready{false};
    std::vector<std::int64_t> latency_ns;  // consumer thread: send to receive
    std::vector<std::int64_t> ack_ns;      // producer poll thread: send to delivery report
    std::int64_t errors = 0;
};

/// Delivery reports in latency mode: the produce round trip of each measured record, read from
/// the stamp in its payload (librdkafka keeps the copied payload until the report).
void on_latency_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* lc = static_cast<latency_consumer*>(opaque);
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR || m->len < sizeof(stamp)) {
        return;
    }
    stamp s{};
    std::memcpy(&s, m->payload, sizeof s);
    if (s.nonce == lc->nonce && s.sent_ns >= lc->measure_from_ns.load()) {
        lc->ack_ns.push_back(now_ns() - s.sent_ns);
    }
}

void consume_latency(const options& o, const target& t, latency_consumer& lc,
                     std::int64_t deadline_ns) {
    rd_kafka_t* rk = make_consumer(o, t);
    const int parts = partition_count(rk, o.topic, deadline_ns);
    assign_or_die(rk, all_partitions(o.topic, parts, RD_KAFKA_OFFSET_BEGINNING));
    lc.ready = true;
    while (now_ns() < std::min(deadline_ns, lc.drain_until_ns.load())) {
        const std::int64_t want = lc.produced.load();
        if (want >= 0 && lc.received.load() >= want) {
            break;
        }
        rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 50);
        if (m == nullptr) {
            continue;
        }
        const std::int64_t now = now_ns();
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (lc.errors++ == 0) {
                std::fprintf(stderr, "kafka_load: latency consumer: %s\n",
                             rd_kafka_message_errstr(m));
            }
        } else if (m->len >= sizeof(stamp)) {
            stamp s{};
            std::memcpy(&s, m->payload, sizeof s);
            if (s.nonce == lc.nonce) {
                if (s.sent_ns >= lc.measure_from_ns) {
                    lc.latency_ns.push_back(now - s.sent_ns);
                }
                lc.received.fetch_add(1);
            }
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

void run_latency(const options& o, const target& t, std::int64_t deadline_ns) {
    latency_consumer lc;
    lc.nonce = static_cast<std::uint64_t>(now_ns()) ^ 0x9e3779b97f4a7c15ULL;
    const auto expected = static_cast<std::size_t>(o.rate * (o.duration_s + 1));
    lc.latency_ns.reserve(expected);
    lc.ack_ns.reserve(expected);

    rd_kafka_conf_t* conf = producer_conf(o, t);
    rd_kafka_conf_set_dr_msg_cb(conf, on_latency_delivery);
    rd_kafka_conf_set_opaque(conf, &lc);
    rd_kafka_t* rk = make_client(RD_KAFKA_PRODUCER, conf);
    partition_count(rk, o.topic, deadline_ns);
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, o.topic.c_str(), nullptr);

    std::thread consumer([&] { consume_latency(o, t, lc, deadline_ns); });
    while (!lc.ready && now_ns() < deadline_ns) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }

    // Delivery reports are served by their own thread so that their timing does not depend on
    // the send loop's millisecond ticks.
    std::atomic<bool> stop_polling{false};
    std::thread poller([&] {
        while (!stop_polling) {
            rd_kafka_poll(rk, 50);
        }
    });

    std::string payload(o.size, 'x');
    const std::int64_t start = now_ns();
    const auto warm_ns = static_cast<std::int64_t>(o.warmup_s * 1e9);
    const auto run_ns = warm_ns + static_cast<std::int64_t>(o.duration_s * 1e9);
    lc.measure_from_ns = start + warm_ns;
    std::int64_t sent = 0, queue_full = 0;
    auto next_tick = steady::now();
    for (;;) {
        const std::int64_t now = now_ns();
        if (now - start >= run_ns || now > deadline_ns) {
            break;
        }
        // Steady rate: catch up to rate * elapsed, then sleep to the next millisecond tick.
        const auto due = static_cast<std::int64_t>(o.rate * static_cast<double>(now - start) / 1e9);
        while (sent < due) {
            stamp s{lc.nonce, static_cast<std::uint64_t>(sent), now_ns()};
            std::memcpy(payload.data(), &s, sizeof s);
            if (rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, payload.data(),
                                 payload.size(), nullptr, 0, nullptr) != 0) {
                ++queue_full;  // the target cannot keep up with the rate
                break;
            }
            ++sent;
        }
        next_tick += std::chrono::milliseconds(1);
        std::this_thread::sleep_until(next_tick);
    }
    const double send_seconds = static_cast<double>(now_ns() - start) / 1e9;
    while (rd_kafka_outq_len(rk) > 0 && now_ns() < deadline_ns) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop_polling = true;
    poller.join();
    lc.drain_until_ns = now_ns() + 10'000'000'000;  // lost records must not stall the run
    lc.produced = sent;
    consumer.join();
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);

    const std::int64_t received = lc.received.load();
    auto lat = summarize(lc.latency_ns);
    auto ack = summarize(lc.ack_ns);
    const bool complete = received == sent && queue_full == 0;
    std::printf("{\"mode\":\"latency\",\"target\":\"%s\",\"acks\":\"%s\",\"partitions\":%d,"
                "\"size\":%zu,\"rate\":%.0f,\"sent\":%" PRId64 ",\"received\":%" PRId64
                ",\"measured\":%zu,\"send_rate\":%.0f,\"queue_full\":%" PRId64
                ",\"errors\":%" PRId64 ",\"complete\":%s,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
                "\"p999_ms\":%.3f,\"max_ms\":%.3f,\"ack_p50_ms\":%.3f,\"ack_p99_ms\":%.3f,"
                "\"ack_p999_ms\":%.3f}\n",
                o.label.c_str(), o.acks.c_str(), o.partitions, o.size, o.rate, sent, received,
                lc.latency_ns.size(), static_cast<double>(sent) / send_seconds, queue_full,
                lc.errors, complete ? "true" : "false", lat.p50_ms, lat.p99_ms, lat.p999_ms,
                lat.max_ms, ack.p50_ms, ack.p99_ms, ack.p999_ms);
    std::printf("# latency  %-7s %.0f rec/s for %.0f s (+%.0f s warm-up): end-to-end p50 %.2f "
                "p99 %.2f p99.9 %.2f max %.2f ms; produce ack p50 %.2f p99 %.2f p99.9 %.2f ms "
                "(%" PRId64 " sent, %" PRId64 " received)\n",
                o.label.c_str(), o.rate, o.duration_s, o.warmup_s, lat.p50_ms, lat.p99_ms,
                lat.p999_ms, lat.max_ms, ack.p50_ms, ack.p99_ms, ack.p999_ms, sent, received);
    std::fflush(stdout);
}

// --- create ------------------------------------------------------------------------------

void run_create(const options& o, const target& t, std::int64_t deadline_ns) {
    std::vector<std::string> names;
    for (int i = 0; i < o.topics; ++i) {
        names.push_back(o.topic + "-" + std::to_string(i));
    }
    const std::int64_t start = now_ns();
    create_topics(o, t, names, o.partitions, deadline_ns);
    const double seconds = static_cast<double>(now_ns() - start) / 1e9;
    std::printf("{\"mode\":\"create\",\"target\":\"%s\",\"topics\":%d,\"partitions\":%d,"
                "\"seconds\":%.3f}\n# create   %-7s %d topics x %d partitions in %.2f s\n",
                o.label.c_str(), o.topics, o.partitions, seconds, o.label.c_str(), o.topics,
                o.partitions, seconds);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse_args(argc, argv);
    const std::int64_t deadline = now_ns() + static_cast<std::int64_t>(o.timeout_s * 1e9);
    target t(o);
    if (o.create && o.mode != "create") {
        create_topics(o, t, {o.topic}, o.partitions, deadline);
    }
    if (o.mode == "produce") {
        auto r = produce_parallel(o, t, deadline);
        const auto latency = summarize(r.latency_ns);
        print_throughput(o, "produce", r.delivered, r.failed, r.seconds, r.complete, &latency);
    } else if (o.mode == "consume") {
        run_consume(o, t, deadline);
    } else if (o.mode == "latency") {
        run_latency(o, t, deadline);
    } else {
        run_create(o, t, deadline);
    }
    return 0;
}
