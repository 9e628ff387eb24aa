// group_load: load on a Kafka broker's group coordinator, over the Kafka protocol (plain TCP
// sockets and sluice's generated codec; no Kafka client library), so that the same tool
// measures any build of sluice, or any broker.
//
//   group_load --bootstrap 127.0.0.1:9092 [--groups 200] [--members 2] [--seconds 20]
//              [--baseline-seconds 5] [--partitions 8] [--hold-ms 100] [--heartbeat-ms 50]
//              [--leave-rate N] [--topic group-load] [--prefix group-load]
//
// Two loads, in two phases:
//   * a committer: one "simple" group (no members) committing offsets of --partitions
//     partitions in a loop, one OffsetCommit v7 in flight, on its own connection and thread;
//     every round trip is a latency sample;
//   * churn: --groups classic groups of --members members each, every member on its own
//     connection: FindCoordinator v2, JoinGroup v5 (with the MEMBER_ID_REQUIRED round trip),
//     SyncGroup v3 (the leader sends a range assignment), Heartbeat v3 every --heartbeat-ms for
//     --hold-ms (rejoining when the group rebalances), LeaveGroup v3, and again. Members leave
//     at different times, so every group rebalances all the time. Unpaced, the churn goes as
//     fast as the coordinator lets it (its capacity); with --leave-rate N, at most N members
//     leave per second in all (each waits, heartbeating, for a slot), which offers every
//     broker the same churn, so that commit latencies compare.
// Phase 1 (--baseline-seconds) runs the committer alone; phase 2 (--seconds) runs both. It
// prints the commit latency of each phase (p50, p99, max), the rebalances completed per
// second under churn (a generation whose leader's SyncGroup succeeded), error counts, and
// one line "RESULT {json}" for scripts (scripts/run-group-bench).
//
// Start the broker with group.initial.rebalance.delay.ms=0, or every empty group waits that
// long (3 s by default) before its first generation. Not a test: nothing here gates a build.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "protocol/core/bytes.h"
#include "protocol/kafka/error_code.h"
#include "protocol/kafka/header.h"
#include "protocol/kafka/messages/create_topics.h"
#include "protocol/kafka/messages/find_coordinator.h"
#include "protocol/kafka/messages/heartbeat.h"
#include "protocol/kafka/messages/join_group.h"
#include "protocol/kafka/messages/leave_group.h"
#include "protocol/kafka/messages/offset_commit.h"
#include "protocol/kafka/messages/sync_group.h"

namespace {

namespace asio = boost::asio;
namespace kafka = sluice::protocol::kafka;
using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;
using kafka::error_code;

// The versions this tool speaks (none flexible: response header v0).
constexpr std::int16_t join_group_version = 5;
constexpr std::int16_t sync_group_version = 3;
constexpr std::int16_t heartbeat_version = 3;
constexpr std::int16_t leave_group_version = 3;
constexpr std::int16_t offset_commit_version = 7;
constexpr std::int16_t find_coordinator_version = 2;
constexpr std::int16_t create_topics_version = 4;
constexpr std::size_t max_response_bytes = 64 << 20;

struct options {
    std::string host = "127.0.0.1";
    std::string port = "9092";
    int groups = 200;
    int members = 2;
    double seconds = 20;
    double baseline_seconds = 5;
    int partitions = 8;
    int hold_ms = 100;
    double leave_rate = 0;  // leaves per second in all, 0: as fast as the groups go
    int heartbeat_ms = 50;
    std::string topic = "group-load";
    std::string prefix = "group-load";
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "group_load: %s\n"
                 "usage: group_load --bootstrap HOST:PORT [--groups N] [--members N] "
                 "[--seconds S] [--baseline-seconds S] [--partitions N] [--hold-ms MS] "
                 "[--heartbeat-ms MS] [--leave-rate N] [--topic NAME] [--prefix NAME]\n",
                 why);
    std::exit(2);
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                usage(("missing value for " + a).c_str());
            }
            return argv[++i];
        };
        if (a == "--bootstrap") {
            const std::string v = value();
            const auto colon = v.rfind(':');
            if (colon == std::string::npos) {
                usage("--bootstrap wants HOST:PORT");
            }
            o.host = v.substr(0, colon);
            o.port = v.substr(colon + 1);
        } else if (a == "--groups") {
            o.groups = std::stoi(value());
        } else if (a == "--members") {
            o.members = std::stoi(value());
        } else if (a == "--seconds") {
            o.seconds = std::stod(value());
        } else if (a == "--baseline-seconds") {
            o.baseline_seconds = std::stod(value());
        } else if (a == "--partitions") {
            o.partitions = std::stoi(value());
        } else if (a == "--leave-rate") {
            o.leave_rate = std::stod(value());
        } else if (a == "--hold-ms") {
            o.hold_ms = std::stoi(value());
        } else if (a == "--heartbeat-ms") {
            o.heartbeat_ms = std::stoi(value());
        } else if (a == "--topic") {
            o.topic = value();
        } else if (a == "--prefix") {
            o.prefix = value();
        } else {
            usage(("unknown option " + a).c_str());
        }
    }
    if (o.groups < 0 || o.members < 1 || o.partitions < 1 || o.seconds <= 0 ||
        o.baseline_seconds < 0 || o.hold_ms < 0 || o.heartbeat_ms < 1 || o.leave_rate < 0) {
        usage("out-of-range option");
    }
    return o;
}

/// One broker connection; requests go one at a time (each member and the committer has its
/// own connection, as a client has).
class connection {
  public:
    explicit connection(asio::any_io_executor ex) : socket_(std::move(ex)) {}

    asio::awaitable<void> connect(const std::string& host, const std::string& port) {
        tcp::resolver resolver(socket_.get_executor());
        auto endpoints = co_await resolver.async_resolve(host, port, asio::use_awaitable);
        co_await asio::async_connect(socket_, endpoints, asio::use_awaitable);
        socket_.set_option(tcp::no_delay(true));
    }

    template <typename Response, typename Request>
    asio::awaitable<Response> call(const Request& req, std::int16_t version) {
        sluice::protocol::writer w;
        const std::size_t size_at = w.reserve_i32();
        kafka::request_header h;
        h.api_key = static_cast<std::int16_t>(Request::key);
        h.api_version = version;
        h.correlation_id = ++correlation_id_;
        h.client_id = "group_load";
        h.header_version = kafka::request_header_version(h.api_key, version);
        kafka::encode_request_header(w, h);
        req.encode(w, version);
        w.patch_i32(size_at, static_cast<std::int32_t>(w.size() - 4));
        co_await asio::async_write(socket_, asio::buffer(w.buffer().data(), w.buffer().size()),
                                   asio::use_awaitable);

        std::array<std::byte, 4> size_bytes{};
        co_await asio::async_read(socket_, asio::buffer(size_bytes), asio::use_awaitable);
        sluice::protocol::reader size_reader(
            sluice::protocol::bytes_view(size_bytes.data(), size_bytes.size()));
        const std::int32_t size = size_reader.i32();
        if (size < 4 || static_cast<std::size_t>(size) > max_response_bytes) {
            throw std::runtime_error("bad response size " + std::to_string(size));
        }
        frame_.resize(static_cast<std::size_t>(size));
        co_await asio::async_read(socket_, asio::buffer(frame_), asio::use_awaitable);
        sluice::protocol::reader r(sluice::protocol::bytes_view(frame_.data(), frame_.size()));
        if (r.i32() != h.correlation_id) {
            throw std::runtime_error("response out of order");
        }
        if (Response::is_flexible(version)) {
            throw std::logic_error("flexible versions are not used here");
        }
        Response resp;
        resp.decode(r, version);
        if (!r.ok()) {
            throw std::runtime_error("undecodable " + std::string(kafka::api_name(Request::key)) +
                                     " response");
        }
        co_return resp;
    }

    void close() {
        boost::system::error_code ignored;
        socket_.close(ignored);
    }

  private:
    tcp::socket socket_;
    std::int32_t correlation_id_ = 0;
    std::vector<std::byte> frame_;
};

/// Latencies in microseconds.
struct latencies {
    std::vector<double> us;
    std::map<std::string, std::uint64_t> errors;

    double percentile(double q) const {
        if (us.empty()) {
            return 0;
        }
        std::vector<double> s = us;
        const auto k = static_cast<std::size_t>(q * static_cast<double>(s.size() - 1));
        std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
        return s[k];
    }
    double max() const { return us.empty() ? 0 : *std::max_element(us.begin(), us.end()); }
};

/// Shared by the churn coroutines (one io_context thread) and read by main once they end.
struct churn_stats {
    // Generations whose leader's SyncGroup succeeded; read by main while the members run.
    std::atomic<std::uint64_t> rebalances{0};
    std::uint64_t joins = 0;
    std::uint64_t syncs = 0;
    std::uint64_t heartbeats = 0;
    std::uint64_t leaves = 0;
    std::atomic<std::uint64_t> leaves_counted{0};  // the same, read by main while members run
    std::map<std::string, std::uint64_t> errors;
};

std::vector<std::byte> to_bytes(const sluice::protocol::writer& w) {
    auto v = w.buffer().view();
    return {v.begin(), v.end()};
}

/// Consumer-protocol subscription v0: the topic list, no user data.
std::vector<std::byte> subscription(const std::string& topic) {
    sluice::protocol::writer w;
    w.i16(0);
    w.i32(1);
    w.string(topic, false);
    w.i32(-1);
    return to_bytes(w);
}

/// Consumer-protocol assignment v0 of some partitions of one topic.
std::vector<std::byte> assignment(const std::string& topic, const std::vector<int>& parts) {
    sluice::protocol::writer w;
    w.i16(0);
    w.i32(1);
    w.string(topic, false);
    w.i32(static_cast<std::int32_t>(parts.size()));
    for (int p : parts) {
        w.i32(p);
    }
    w.i32(-1);
    return to_bytes(w);
}

std::string name_of(error_code e) {
    return std::string(kafka::error_name(e));
}

/// Connects to the coordinator of `group` (FindCoordinator on the bootstrap connection; a
/// single broker answers with itself, but the answer is honoured).
asio::awaitable<void> connect_to_coordinator(connection& conn, const options& o,
                                             const std::string& group) {
    co_await conn.connect(o.host, o.port);
    kafka::find_coordinator_request req;
    req.key_ = group;
    req.key_type = 0;
    for (int attempt = 0;; ++attempt) {
        auto resp =
            co_await conn.call<kafka::find_coordinator_response>(req, find_coordinator_version);
        if (resp.error_code == error_code::none) {
            if (resp.host != o.host || std::to_string(resp.port) != o.port) {
                conn.close();
                co_await conn.connect(resp.host, std::to_string(resp.port));
            }
            co_return;
        }
        if (attempt > 50) {
            throw std::runtime_error("FindCoordinator: " + name_of(resp.error_code));
        }
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(100));
        co_await t.async_wait(asio::use_awaitable);
    }
}

/// Paces the members' leaves (--leave-rate): each leave takes the next free slot, 1/rate
/// apart. Used on the churn thread only.
class leave_pacer {
  public:
    explicit leave_pacer(double rate) : rate_(rate) {}
    /// When a member that wants to leave at `wanted` may leave.
    clock_type::time_point slot(clock_type::time_point wanted) {
        if (rate_ <= 0) {
            return wanted;
        }
        next_ = std::max(next_, wanted);
        const auto at = next_;
        next_ += std::chrono::duration_cast<clock_type::duration>(
            std::chrono::duration<double>(1.0 / rate_));
        return at;
    }

  private:
    double rate_;
    clock_type::time_point next_{};
};

struct member_context {
    const options& o;
    std::string group;
    int index = 0;
    const std::atomic<bool>& stop;
    churn_stats& stats;
    leave_pacer& pacer;
};

/// Joins (with the MEMBER_ID_REQUIRED round trip, and again after REBALANCE_IN_PROGRESS)
/// and syncs; the generation, or nullopt when stopped first. `member_id` is the member's id
/// (empty: a new member), updated on the way.
asio::awaitable<std::optional<std::int32_t>> join_and_sync(connection& conn,
                                                           const member_context& m,
                                                           std::string& member_id) {
    auto error = [&](const char* api, error_code e) {
        ++m.stats.errors[std::string(api) + ":" + name_of(e)];
    };
    while (!m.stop.load()) {
        kafka::join_group_request join;
        join.group_id = m.group;
        join.session_timeout_ms = std::chrono::milliseconds(10000);
        join.rebalance_timeout_ms = std::chrono::milliseconds(10000);
        join.member_id = member_id;
        join.protocol_type = "consumer";
        join.protocols.push_back({"range", subscription(m.o.topic), {}});
        auto joined = co_await conn.call<kafka::join_group_response>(join, join_group_version);
        ++m.stats.joins;
        if (joined.error_code == error_code::member_id_required) {
            member_id = joined.member_id;
            continue;
        }
        if (joined.error_code != error_code::none) {
            error("JoinGroup", joined.error_code);
            member_id.clear();
            continue;
        }
        member_id = joined.member_id;
        kafka::sync_group_request sync;
        sync.group_id = m.group;
        sync.generation_id = joined.generation_id;
        sync.member_id = member_id;
        const bool leader = joined.leader == member_id;
        if (leader) {
            // Round robin over the partitions, in the order the members are listed.
            const auto n = static_cast<int>(joined.members.size());
            for (int i = 0; i < n; ++i) {
                std::vector<int> parts;
                for (int p = i; p < m.o.partitions; p += n) {
                    parts.push_back(p);
                }
                sync.assignments.push_back({joined.members[static_cast<std::size_t>(i)].member_id,
                                            assignment(m.o.topic, parts),
                                            {}});
            }
        }
        auto synced = co_await conn.call<kafka::sync_group_response>(sync, sync_group_version);
        ++m.stats.syncs;
        if (synced.error_code == error_code::none) {
            if (leader) {
                m.stats.rebalances.fetch_add(1, std::memory_order_relaxed);
            }
            co_return joined.generation_id;
        }
        if (synced.error_code != error_code::rebalance_in_progress) {
            error("SyncGroup", synced.error_code);
            member_id.clear();  // no longer in the group: join as a new member
        }
    }
    co_return std::nullopt;
}

/// One member's life, again and again: join and sync, heartbeat while it holds its
/// assignment (rejoining whenever another member's arrival or departure rebalances the
/// group), leave after about --hold-ms, and start over as a new member.
asio::awaitable<void> run_member(member_context m) {
    auto ex = co_await asio::this_coro::executor;
    connection conn(ex);
    co_await connect_to_coordinator(conn, m.o, m.group);
    std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>{}(m.group)) +
                     static_cast<unsigned>(m.index));
    std::uniform_int_distribution<int> hold(m.o.hold_ms / 2, m.o.hold_ms * 3 / 2 + 1);
    const auto heartbeat_interval = std::chrono::milliseconds(m.o.heartbeat_ms);
    while (!m.stop.load()) {
        std::string member_id;
        bool in_group = true;
        auto leave_at = clock_type::now() + std::chrono::milliseconds(hold(rng));
        bool paced = false;
        for (bool rebalance = true; rebalance && in_group && !m.stop.load();) {
            rebalance = false;
            auto generation = co_await join_and_sync(conn, m, member_id);
            if (!generation) {
                break;  // stopped
            }
            for (;;) {
                if (!paced && clock_type::now() >= leave_at) {
                    // Held long enough: leave at the next free slot, heartbeating till then
                    // (and rejoining when the group rebalances meanwhile).
                    paced = true;
                    leave_at = m.pacer.slot(leave_at);
                }
                if (m.stop.load() || (paced && clock_type::now() >= leave_at)) {
                    break;
                }
                asio::steady_timer t(ex,
                                     std::min(clock_type::now() + heartbeat_interval, leave_at));
                co_await t.async_wait(asio::use_awaitable);
                if (clock_type::now() >= leave_at) {
                    continue;  // time to leave (or to take a slot): no heartbeat first
                }
                kafka::heartbeat_request hb;
                hb.group_id = m.group;
                hb.generation_id = *generation;
                hb.member_id = member_id;
                auto beat = co_await conn.call<kafka::heartbeat_response>(hb, heartbeat_version);
                ++m.stats.heartbeats;
                if (beat.error_code == error_code::rebalance_in_progress) {
                    rebalance = true;  // rejoin with the same id
                    break;
                }
                if (beat.error_code != error_code::none) {
                    ++m.stats.errors["Heartbeat:" + name_of(beat.error_code)];
                    in_group = false;
                    break;
                }
            }
        }
        if (!in_group || member_id.empty()) {
            continue;
        }
        kafka::leave_group_request leave;
        leave.group_id = m.group;
        leave.members.push_back({member_id, std::nullopt, std::string("group_load churn"), {}});
        auto left = co_await conn.call<kafka::leave_group_response>(leave, leave_group_version);
        ++m.stats.leaves;
        m.stats.leaves_counted.fetch_add(1, std::memory_order_relaxed);
        if (left.error_code != error_code::none) {
            ++m.stats.errors["LeaveGroup:" + name_of(left.error_code)];
        }
    }
    conn.close();
}

/// The committer: OffsetCommit v7 of every partition, back to back, until `stop`.
asio::awaitable<void> run_committer(const options& o, std::string group,
                                    const std::atomic<bool>& stop, std::mutex& mu,
                                    latencies*& current) {
    connection conn(co_await asio::this_coro::executor);
    co_await connect_to_coordinator(conn, o, group);
    std::int64_t next = 0;
    while (!stop.load()) {
        kafka::offset_commit_request req;
        req.group_id = group;
        req.generation_id_or_member_epoch = -1;  // a "simple" group: no membership
        auto& t = req.topics.emplace_back();
        t.name = o.topic;
        ++next;
        for (int p = 0; p < o.partitions; ++p) {
            auto& part = t.partitions.emplace_back();
            part.partition_index = sluice::partition_id(p);
            part.committed_offset = sluice::offset(next);
            part.committed_metadata = std::string();
        }
        const auto began = clock_type::now();
        auto resp = co_await conn.call<kafka::offset_commit_response>(req, offset_commit_version);
        const double us =
            std::chrono::duration<double, std::micro>(clock_type::now() - began).count();
        std::lock_guard lock(mu);
        if (current == nullptr) {
            continue;  // between phases' ends: not counted
        }
        current->us.push_back(us);
        for (const auto& rt : resp.topics) {
            for (const auto& rp : rt.partitions) {
                if (rp.error_code != error_code::none) {
                    ++current->errors[name_of(rp.error_code)];
                }
            }
        }
    }
    conn.close();
}

asio::awaitable<void> create_topic(const options& o) {
    connection conn(co_await asio::this_coro::executor);
    co_await conn.connect(o.host, o.port);
    kafka::create_topics_request req;
    auto& t = req.topics.emplace_back();
    t.name = o.topic;
    t.num_partitions = o.partitions;
    t.replication_factor = 1;
    auto resp = co_await conn.call<kafka::create_topics_response>(req, create_topics_version);
    for (const auto& r : resp.topics) {
        if (r.error_code != error_code::none && r.error_code != error_code::topic_already_exists) {
            throw std::runtime_error("CreateTopics " + r.name + ": " + name_of(r.error_code));
        }
    }
    conn.close();
}

/// Runs `a` on a fresh io_context on this thread; rethrows what it threw.
void run_here(asio::awaitable<void> a) {
    asio::io_context io;
    std::exception_ptr failed;
    asio::co_spawn(io, std::move(a), [&](std::exception_ptr e) { failed = e; });
    io.run();
    if (failed) {
        std::rethrow_exception(failed);
    }
}

std::string ms(double us) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", us / 1000.0);
    return buf;
}

std::string json_latency(const latencies& l, double seconds) {
    std::string errors = "{";
    for (const auto& [k, v] : l.errors) {
        errors +=
            (errors.size() > 1 ? "," : "") + std::string("\"") + k + "\":" + std::to_string(v);
    }
    errors += "}";
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"commits\":%zu,\"commits_per_s\":%.1f,\"p50_ms\":%s,\"p99_ms\":%s,"
                  "\"max_ms\":%s,\"errors\":%s}",
                  l.us.size(), seconds > 0 ? static_cast<double>(l.us.size()) / seconds : 0.0,
                  ms(l.percentile(0.50)).c_str(), ms(l.percentile(0.99)).c_str(),
                  ms(l.max()).c_str(), errors.c_str());
    return buf;
}

void print_latency(const char* phase, const latencies& l, double seconds) {
    std::printf("%-22s %7zu commits (%.0f/s)  p50 %s ms  p99 %s ms  max %s ms", phase, l.us.size(),
                seconds > 0 ? static_cast<double>(l.us.size()) / seconds : 0.0,
                ms(l.percentile(0.50)).c_str(), ms(l.percentile(0.99)).c_str(),
                ms(l.max()).c_str());
    for (const auto& [k, v] : l.errors) {
        std::printf("  %s x%llu", k.c_str(), static_cast<unsigned long long>(v));
    }
    std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    try {
        run_here(create_topic(o));

        // The committer, on its own thread and connection for both phases.
        std::atomic<bool> commit_stop{false};
        std::mutex commit_mu;
        latencies baseline;
        latencies loaded;
        latencies* current = &baseline;
        std::exception_ptr committer_failed;
        std::thread committer([&] {
            try {
                run_here(
                    run_committer(o, o.prefix + "-committer", commit_stop, commit_mu, current));
            } catch (...) {
                committer_failed = std::current_exception();
            }
        });
        const auto phase = [](double s) {
            std::this_thread::sleep_for(std::chrono::duration<double>(s));
        };
        phase(o.baseline_seconds);

        // Phase 2: churn on its own thread (one io_context for every member).
        {
            std::lock_guard lock(commit_mu);
            current = &loaded;
        }
        std::atomic<bool> churn_stop{false};
        churn_stats stats;
        leave_pacer pacer(o.leave_rate);
        std::exception_ptr churn_failed;
        asio::io_context io;
        for (int g = 0; g < o.groups; ++g) {
            for (int i = 0; i < o.members; ++i) {
                member_context m{o,    o.prefix + "-" + std::to_string(g), i, churn_stop, stats,
                                 pacer};
                asio::co_spawn(io, run_member(m), [&](std::exception_ptr e) {
                    if (e && !churn_failed) {
                        churn_failed = e;
                    }
                });
            }
        }
        const auto churn_began = clock_type::now();
        std::thread churn([&] { io.run(); });
        phase(o.seconds);
        const double churn_seconds =
            std::chrono::duration<double>(clock_type::now() - churn_began).count();
        {
            std::lock_guard lock(commit_mu);
            current = nullptr;  // samples after this point are not counted
        }
        const std::uint64_t rebalances = stats.rebalances.load();
        const std::uint64_t leaves = stats.leaves_counted.load();
        churn_stop = true;
        commit_stop = true;
        committer.join();
        // Members finish their round (leave); a member parked in a rebalance that never
        // completes would keep io busy for its rebalance timeout at most.
        const auto drain_deadline = clock_type::now() + std::chrono::seconds(15);
        while (!io.stopped() && clock_type::now() < drain_deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        io.stop();
        churn.join();
        if (committer_failed) {
            std::rethrow_exception(committer_failed);
        }
        if (churn_failed) {
            std::rethrow_exception(churn_failed);
        }

        const std::string pacing = o.leave_rate > 0
                                       ? "leaves paced at " + std::to_string(o.leave_rate) + "/s"
                                       : "leaves unpaced";
        std::printf(
            "group_load: %d groups x %d members churning (%s), 1 group committing %d "
            "partitions; %.0f s baseline, %.0f s under churn\n",
            o.groups, o.members, pacing.c_str(), o.partitions, o.baseline_seconds, churn_seconds);
        print_latency("commit, alone", baseline, o.baseline_seconds);
        print_latency("commit, under churn", loaded, churn_seconds);
        std::printf(
            "churn: %llu rebalances (%.1f/s), %llu joins, %llu syncs, %llu heartbeats, "
            "%llu leaves",
            static_cast<unsigned long long>(rebalances),
            static_cast<double>(rebalances) / churn_seconds,
            static_cast<unsigned long long>(stats.joins),
            static_cast<unsigned long long>(stats.syncs),
            static_cast<unsigned long long>(stats.heartbeats),
            static_cast<unsigned long long>(stats.leaves));
        for (const auto& [k, v] : stats.errors) {
            std::printf("  %s x%llu", k.c_str(), static_cast<unsigned long long>(v));
        }
        std::printf(
            "\nRESULT {\"groups\":%d,\"members\":%d,\"leave_rate\":%.1f,\"leaves_per_s\":%.1f,"
            "\"seconds\":%.1f,\"baseline\":%s,\"loaded\":%s,\"rebalances\":%llu,"
            "\"rebalances_per_s\":%.1f}\n",
            o.groups, o.members, o.leave_rate, static_cast<double>(leaves) / churn_seconds,
            churn_seconds, json_latency(baseline, o.baseline_seconds).c_str(),
            json_latency(loaded, churn_seconds).c_str(),
            static_cast<unsigned long long>(rebalances),
            static_cast<double>(rebalances) / churn_seconds);
    } catch (const std::exception& ex) {
        std::fprintf(stderr, "group_load: %s\n", ex.what());
        return 1;
    }
    return 0;
}
