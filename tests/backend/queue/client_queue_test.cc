// The queue service's pieces over the client level (backend/queue/client_backing.h,
// topic_state_log.h), driven over the native backend's client level (backend/client): the
// state log's topic, its replay, the consumer-backed fetch and appends through a producer.
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backend/api/records_memory.h"
#include "backend/queue/client_backing.h"
#include "backend/queue/message_codec.h"
#include "backend/queue/queue_append.h"
#include "backend/queue/queue_directory.h"
#include "backend/queue/state_records.h"
#include "backend/queue/topic_state_log.h"
#include "tests/backend/contract/native_client_factory.h"

namespace sluice::backend::queue {
namespace {

std::vector<std::byte> as_bytes(std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    return {p, p + s.size()};
}

std::string as_text(protocol::bytes_view v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

class ClientQueue : public contract::ClientContract<contract::native_client_factory> {
protected:
    /// Runs a blocking call (open, replay, a destructor) on a thread of its own while this
    /// thread runs the client's io_context.
    void off_thread(const std::function<void()>& fn) {
        std::atomic<bool> done{false};
        std::exception_ptr failure;
        std::thread t([&] {
            try {
                fn();
            } catch (...) {
                failure = std::current_exception();
            }
            done = true;
        });
        const bool finished = run_until([&] { return done.load(); });
        t.join();
        ASSERT_TRUE(finished);
        if (failure) {
            std::rethrow_exception(failure);
        }
    }

    std::vector<std::pair<std::string, std::optional<std::string>>> replay_all(
        topic_state_log_options opts) {
        std::vector<std::pair<std::string, std::optional<std::string>>> seen;
        off_thread([&] {
            topic_state_log log(client(), opts);
            log.open();
            auto r = log.replay([&](protocol::bytes_view k, std::optional<protocol::bytes_view> v) {
                seen.emplace_back(as_text(k), v ? std::optional<std::string>(as_text(*v))
                                                : std::nullopt);
            });
            ASSERT_TRUE(r) << r.error().message();
        });
        return seen;
    }
};

TEST_F(ClientQueue, StateLogReplaysWhatWasFlushedInOrderFromACompactedTopic) {
    topic_state_log_options opts;
    opts.topic = "_sluice_queue_state_" + unique_topic("t");
    opts.start_deadline = std::chrono::seconds(10);
    opts.flush_timeout = std::chrono::seconds(10);
    std::unique_ptr<topic_state_log> log;
    off_thread([&] {
        log = std::make_unique<topic_state_log>(client(), opts);
        log->open();
        auto empty = log->replay([](protocol::bytes_view, std::optional<protocol::bytes_view>) {
            ADD_FAILURE() << "a new state topic holds nothing";
        });
        ASSERT_TRUE(empty);
    });
    std::vector<encoded_record> first{{as_bytes("a"), as_bytes("1")}, {as_bytes("b"), as_bytes("2")}};
    std::vector<encoded_record> second{{as_bytes("a"), std::nullopt}, {as_bytes("c"), as_bytes("3")}};
    ASSERT_TRUE(log->append(first));
    auto p = log->append(second);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->end, 4);
    auto flushed = run(log->flush(*p));
    ASSERT_TRUE(flushed) << flushed.error().message();
    off_thread([&] { log.reset(); });

    auto configs = run(admin().describe_topic_configs(topic_name(opts.topic)));
    ASSERT_TRUE(configs);
    bool compact = false;
    for (const auto& c : *configs) {
        compact = compact || (c.name == "cleanup.policy" && c.value == "compact");
    }
    EXPECT_TRUE(compact);

    const auto seen = replay_all(opts);
    ASSERT_EQ(seen.size(), 4u);
    EXPECT_EQ(seen[0], (std::pair<std::string, std::optional<std::string>>{"a", "1"}));
    EXPECT_EQ(seen[1], (std::pair<std::string, std::optional<std::string>>{"b", "2"}));
    EXPECT_EQ(seen[2], (std::pair<std::string, std::optional<std::string>>{"a", std::nullopt}));
    EXPECT_EQ(seen[3], (std::pair<std::string, std::optional<std::string>>{"c", "3"}));
}

TEST_F(ClientQueue, StateLogsOfTwoPartitionsOfOneTopicKeepTheirRecordsApart) {
    // A fleet's units of ownership: one log per partition of the state topic, each writing
    // and replaying its own partition alone.
    topic_state_log_options unit0;
    unit0.topic = "_sluice_queue_state_" + unique_topic("p");
    unit0.start_deadline = std::chrono::seconds(10);
    unit0.flush_timeout = std::chrono::seconds(10);
    unit0.partitions_when_created = 3;
    topic_state_log_options unit2 = unit0;
    unit2.partition = 2;
    unit2.partitions_when_created = 1;  // the topic exists: its count is the cluster's
    std::unique_ptr<topic_state_log> log0;
    std::unique_ptr<topic_state_log> log2;
    off_thread([&] {
        log0 = std::make_unique<topic_state_log>(client(), unit0);
        log0->open();  // creates the topic with 3 partitions
        log2 = std::make_unique<topic_state_log>(client(), unit2);
        log2->open();
    });
    EXPECT_EQ(log0->partition_count(), 3);
    EXPECT_EQ(log2->partition_count(), 3);
    std::vector<encoded_record> zero{{as_bytes("q0"), as_bytes("a")}};
    std::vector<encoded_record> two{{as_bytes("q2"), as_bytes("b")},
                                    {as_bytes("q2"), as_bytes("c")}};
    auto p0 = log0->append(zero);
    auto p2 = log2->append(two);
    ASSERT_TRUE(p0 && p2);
    auto f0 = run(log0->flush(*p0));
    ASSERT_TRUE(f0) << f0.error().message();
    auto f2 = run(log2->flush(*p2));
    ASSERT_TRUE(f2) << f2.error().message();
    off_thread([&] {
        log0.reset();
        log2.reset();
    });

    using kv = std::pair<std::string, std::optional<std::string>>;
    EXPECT_EQ(replay_all(unit0), (std::vector<kv>{{"q0", "a"}}));
    EXPECT_EQ(replay_all(unit2), (std::vector<kv>{{"q2", "b"}, {"q2", "c"}}));
    unit2.partition = 1;
    EXPECT_TRUE(replay_all(unit2).empty());

    // A partition the topic lacks is refused, never created or guessed.
    topic_state_log_options unit5 = unit0;
    unit5.partition = 5;
    bool refused = false;
    off_thread([&] {
        topic_state_log log(client(), unit5);
        try {
            log.open();
        } catch (const std::runtime_error& e) {
            refused = std::string(e.what()).find("partition 5 is not one of them") !=
                      std::string::npos;
        }
    });
    EXPECT_TRUE(refused);
}

TEST_F(ClientQueue, TheQueueDirectoryFollowsEveryPartitionOfTheStateTopic) {
    topic_state_log_options opts;
    opts.topic = "_sluice_queue_state_" + unique_topic("d");
    opts.start_deadline = std::chrono::seconds(10);
    opts.flush_timeout = std::chrono::seconds(10);
    opts.partitions_when_created = 2;
    for (std::int32_t unit : {0, 1}) {
        opts.partition = unit;
        queue_record q;
        q.name = "in-unit-" + std::to_string(unit);
        q.queue_id = uuid::random();
        q.topic_id = uuid::random();
        std::unique_ptr<topic_state_log> log;
        off_thread([&] {
            log = std::make_unique<topic_state_log>(client(), opts);
            log->open();
        });
        std::vector<encoded_record> records{encode(state_entry{q})};
        auto p = log->append(records);
        ASSERT_TRUE(p);
        auto flushed = run(log->flush(*p));
        ASSERT_TRUE(flushed) << flushed.error().message();
        off_thread([&] { log.reset(); });
    }

    queue_directory directory(client(), opts.topic, arn_scheme{});
    directory.start(executor());
    EXPECT_TRUE(run_until([&] {
        return directory.find("in-unit-0").has_value() && directory.find("in-unit-1").has_value();
    }));
    EXPECT_TRUE(directory.sends_here("in-unit-1"));
    EXPECT_FALSE(directory.find("in-no-unit").has_value());
    off_thread([&] { directory.stop(); });
}

TEST_F(ClientQueue, MessagesSentThroughTheProducerAreFetchedBackAtTheirOffsets) {
    const auto topic = unique_topic("q");
    ASSERT_TRUE(run(admin().create_topic({topic_name(topic), 2, {}, false})));
    client_topics topics(admin());
    auto desc = run(topics.describe(topic_name(topic)));
    ASSERT_TRUE(desc);
    EXPECT_EQ(desc->partitions, 2);
    EXPECT_FALSE(run(topics.describe(topic_name(unique_topic("none")))));

    const std::vector<std::string> bodies{"m0", "m1", "m2"};
    const std::vector<api::message_attribute> attrs;
    const std::optional<std::string> none;
    std::vector<append_item> items;
    for (const auto& b : bodies) {
        append_item it;
        it.body = &b;
        it.attributes = &attrs;
        it.fields.timestamp_ms = 1700000000000;
        it.fields.group_id = &none;
        it.fields.deduplication_id = &none;
        it.fields.trace_header = &none;
        it.fields.dead_letter_source_arn = &none;
        it.partition = 1;
        items.push_back(it);
    }
    auto owned = std::make_unique<client_records>(client(), std::chrono::seconds(5));
    client_records& records = *owned;
    auto offsets = run(append_messages(records, &producer(), topic, items));
    ASSERT_EQ(offsets.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(offsets[i]) << offsets[i].error().message();
        EXPECT_EQ(*offsets[i], static_cast<std::int64_t>(i));
    }

    // The tailer's kind of fetch (both partitions, from offset 1 of partition 1), then a point
    // read: records come back as batches at their own offsets.
    api::fetch_request req;
    req.topics.push_back({topic_name(topic), {}, {{partition_id(0), offset(0), 1 << 20},
                                                 {partition_id(1), offset(1), 1 << 20}}});
    req.max_wait = std::chrono::milliseconds(2000);
    req.isolation = api::isolation::read_committed;
    auto got = run(records.fetch(req));
    ASSERT_EQ(got.topics.size(), 1u);
    ASSERT_EQ(got.topics[0].partitions.size(), 2u);
    const auto& p1 = got.topics[0].partitions[1];
    ASSERT_FALSE(p1.error) << p1.error.code.message();
    auto bytes = api::read_records_into_memory(p1.records);
    ASSERT_TRUE(bytes);
    std::vector<std::pair<std::int64_t, std::string>> seen;
    const auto end = decode_fetched(bytes->view(), {}, [&](std::int64_t off, stored_message m) {
        seen.emplace_back(off, m.body);
    });
    EXPECT_EQ(end, 3);
    EXPECT_EQ(seen, (std::vector<std::pair<std::int64_t, std::string>>{{1, "m1"}, {2, "m2"}}));

    api::fetch_request point;
    point.topics.push_back({topic_name(topic), {}, {{partition_id(1), offset(0), 1}}});
    point.isolation = api::isolation::read_committed;
    auto one = run(records.fetch(point));
    auto one_bytes = api::read_records_into_memory(one.topics.at(0).partitions.at(0).records);
    ASSERT_TRUE(one_bytes);
    std::vector<std::string> first;
    decode_fetched(one_bytes->view(), {}, [&](std::int64_t off, stored_message m) {
        if (off == 0) {
            first.push_back(m.body);
        }
    });
    EXPECT_EQ(first, std::vector<std::string>{"m0"});
    off_thread([&] { owned.reset(); });  // closes its consumers
}

}  // namespace
}  // namespace sluice::backend::queue
