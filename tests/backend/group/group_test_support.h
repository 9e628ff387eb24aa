// A group coordinator over a log on the in-memory file system, with a manual clock, for the
// group coordinator tests. Parked calls complete through callbacks that store the results.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/group/consumer_protocol.h"
#include "backend/group/errc.h"
#include "backend/group/group_coordinator.h"
#include "backend/io/memory_file_system.h"
#include "backend/log/log_manager.h"
#include "protocol/core/bytes.h"

namespace sluice::backend::group::test {

// The request and answer types of the interface the coordinator implements.
using api::commit_topic;
using api::consumer_heartbeat_request;
using api::consumer_heartbeat_result;
using api::join_group_request;
using api::join_group_result;
using api::offset_commit_request;
using api::offset_commit_result;
using api::offset_fetch_request;
using api::owned_partitions;
using api::sync_group_request;
using api::sync_group_result;
using api::topic_partition_list;

/// Consumer-protocol subscription metadata (v0) for `topics`.
inline std::vector<std::byte> subscription(const std::vector<std::string>& topics) {
    protocol::writer w;
    w.i16(0);
    w.i32(static_cast<std::int32_t>(topics.size()));
    for (const auto& t : topics) {
        w.string(t, false);
    }
    w.i32(-1);
    auto v = w.buffer().view();
    return {v.begin(), v.end()};
}

/// Consumer-protocol assignment (v0) of partitions of one topic.
inline std::vector<std::byte> assignment(const std::string& topic, std::vector<std::int32_t> parts) {
    protocol::writer w;
    w.i16(0);
    w.i32(1);
    w.string(topic, false);
    w.i32(static_cast<std::int32_t>(parts.size()));
    for (auto p : parts) {
        w.i32(p);
    }
    w.i32(-1);
    auto v = w.buffer().view();
    return {v.begin(), v.end()};
}

/// Partition ids from plain numbers.
inline std::vector<partition_id> parts(std::initializer_list<std::int32_t> ids) {
    std::vector<partition_id> out;
    for (auto p : ids) {
        out.emplace_back(p);
    }
    return out;
}

class GroupTest : public ::testing::Test {
protected:
    std::shared_ptr<io::memory_file_system> fs = std::make_shared<io::memory_file_system>();
    std::int64_t now = 1'700'000'000'000;
    std::unique_ptr<log::log_manager> log;
    std::unique_ptr<group_coordinator> coord;
    coordinator_config cfg;

    void SetUp() override {
        cfg.initial_rebalance_delay_ms = 100;
        cfg.offsets_retention_check_interval_ms = 60000;
        open_log();
        ASSERT_TRUE(log->create_topic("t", 6, {}));
        ASSERT_TRUE(log->create_topic("u", 2, {}));
        start();
    }
    void TearDown() override {
        if (coord) {
            coord->stop();
        }
        coord.reset();
        if (log) {
            log->close();
        }
    }

    void open_log() {
        log::log_options o;
        o.data_dir = "/data";
        o.fs = fs;
        o.clock = [this] { return now; };
        o.retention_check_interval = std::chrono::milliseconds(0);
        o.compaction_check_interval = std::chrono::milliseconds(0);
        o.flush_threads = 1;
        auto m = log::log_manager::open(std::move(o));
        ASSERT_TRUE(m) << m.error().message();
        log = std::move(*m);
    }

    void start() {
        coord = std::make_unique<group_coordinator>(
            *log, cfg, coordinator_clock{[this] { return now; }, [this] { return now; }});
        coord->start(std::nullopt, true);
    }
    /// A new coordinator replaying the same log (a broker restart without a crash).
    void restart() {
        coord->stop();
        coord.reset();
        start();
    }

    void advance(std::int64_t ms) {
        now += ms;
        coord->run_timers();
    }

    struct pending_join {
        std::shared_ptr<std::optional<join_group_result>> result =
            std::make_shared<std::optional<join_group_result>>();
        bool done() const { return result->has_value(); }
        const join_group_result& get() const { return **result; }
    };
    struct pending_sync {
        std::shared_ptr<std::optional<sync_group_result>> result =
            std::make_shared<std::optional<sync_group_result>>();
        bool done() const { return result->has_value(); }
        const sync_group_result& get() const { return **result; }
    };

    join_group_request join_req(const std::string& group, const std::string& member,
                                std::vector<std::string> topics = {"t"},
                                std::optional<std::string> instance = std::nullopt) {
        join_group_request r;
        r.group_id = group_id(group);
        r.member_id = member;
        r.group_instance_id = std::move(instance);
        r.protocol_type = "consumer";
        r.protocols.push_back({"range", subscription(topics)});
        r.session_timeout_ms = 10000;
        r.rebalance_timeout_ms = 30000;
        r.require_known_member_id = true;
        r.client = {"client", "/127.0.0.1"};
        return r;
    }

    pending_join join(join_group_request r) {
        pending_join p;
        coord->join_group(std::move(r), [res = p.result](join_group_result j) { *res = std::move(j); });
        return p;
    }
    /// The v4+ round trip: MEMBER_ID_REQUIRED, then the join with the id it handed out.
    pending_join join_new(const std::string& group, std::vector<std::string> topics = {"t"}) {
        auto first = join(join_req(group, "", topics));
        EXPECT_TRUE(first.done());
        EXPECT_EQ(first.get().error, errc::member_id_required);
        return join(join_req(group, first.get().member_id, topics));
    }

    pending_sync sync(const std::string& group, const std::string& member, std::int32_t generation,
                      std::map<std::string, std::vector<std::byte>> assignments = {}) {
        sync_group_request r;
        r.group_id = group_id(group);
        r.member_id = member;
        r.generation_id = generation;
        r.assignments = std::move(assignments);
        pending_sync p;
        coord->sync_group(std::move(r), [res = p.result](sync_group_result s) { *res = std::move(s); });
        return p;
    }

    std::error_code beat(const std::string& group, const std::string& member, std::int32_t gen) {
        return coord->heartbeat_now({group_id(group), gen, member, std::nullopt});
    }

    /// One member that joined and synced: its member id, generation 1 (or later).
    std::pair<std::string, std::int32_t> stable_single(const std::string& group) {
        auto j = join_new(group);
        advance(cfg.initial_rebalance_delay_ms);
        EXPECT_TRUE(j.done());
        EXPECT_FALSE(j.get().error) << j.get().error.text();
        auto s = sync(group, j.get().member_id, j.get().generation_id,
                      {{j.get().member_id, assignment("t", {0, 1, 2, 3, 4, 5})}});
        EXPECT_TRUE(s.done());
        EXPECT_FALSE(s.get().error);
        return {j.get().member_id, j.get().generation_id};
    }

    offset_commit_result commit(const std::string& group, std::int32_t generation,
                                const std::string& member,
                                std::vector<std::pair<std::int32_t, std::int64_t>> offsets,
                                const std::string& topic = "t", std::int16_t version = 8) {
        offset_commit_request r;
        r.group_id = group_id(group);
        r.generation_id_or_member_epoch = generation;
        r.member_id = member;
        r.api_version = version;
        auto& t = r.topics.emplace_back();
        t.topic = topic_name(topic);
        for (auto [p, o] : offsets) {
            t.partitions.push_back({partition_id(p), offset(o), -1, std::string("meta")});
        }
        return coord->commit_offsets_now(r);
    }

    /// Committed offset of one partition (-1 when none).
    std::int64_t committed(const std::string& group, std::int32_t partition,
                           const std::string& topic = "t") {
        offset_fetch_request r;
        r.group_id = group_id(group);
        r.topics =
            std::vector<topic_partition_list>{{topic_name(topic), {partition_id(partition)}}};
        auto res = coord->fetch_offsets_now({r});
        EXPECT_EQ(res.size(), 1u);
        EXPECT_FALSE(res[0].error);
        return res[0].topics.at(0).partitions.at(0).committed.value;
    }
};

}  // namespace sluice::backend::group::test
