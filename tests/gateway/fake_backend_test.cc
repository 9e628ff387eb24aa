// The fake backend itself (tests/gateway/fake_backend.h): what the front tests rely on, that
// appended batches come back at their offsets, that a scripted failure hits exactly the calls
// it names, and that the call log holds the arguments.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "protocol/kafka/record_batch_builder.h"

#include "tests/gateway/coroutine_support.h"
#include "tests/gateway/fake_backend.h"

namespace sluice::gateway::testing {
namespace {
namespace asio = boost::asio;

/// One batch of `values` built with the protocol's builder.
std::vector<std::byte> batch_of(const std::vector<std::string>& values) {
    protocol::kafka::record_batch_builder b;
    for (const auto& v : values) {
        b.add(std::nullopt,
              protocol::bytes_view(reinterpret_cast<const std::byte*>(v.data()), v.size()), 1000);
    }
    auto bytes = b.finish();
    EXPECT_TRUE(bytes.has_value());
    const auto view = bytes->view();
    return {view.begin(), view.end()};
}

asio::awaitable<void> produce_then_fetch(fake_backend* fake) {
    auto first = batch_of({"a", "b"});
    auto second = batch_of({"c"});
    for (auto* batch : {&first, &second}) {
        api::produce_request req;
        req.topics.push_back({topic_name("t"), {{partition_id(0), std::span<std::byte>(*batch)}}});
        auto res = co_await fake->records().produce(std::move(req));
        EXPECT_FALSE(res.topics.at(0).partitions.at(0).error);
    }
    const auto& produced = fake->state().produced;
    EXPECT_EQ(produced.size(), 3u);
    EXPECT_EQ(produced.at(2).offset, 2);
    EXPECT_EQ(produced.at(2).value, "c");

    api::fetch_request f;
    f.topics.push_back({topic_name("t"), {}, {{partition_id(0), offset(2), 1 << 20}}});
    auto got = co_await fake->records().fetch(std::move(f));
    const auto& p = got.topics.at(0).partitions.at(0);
    EXPECT_FALSE(p.error);
    EXPECT_EQ(p.high_watermark.value, 3);
    EXPECT_EQ(p.records.size(), second.size());  // the batch holding offset 2 only

    api::fetch_request beyond;
    beyond.topics.push_back({topic_name("t"), {}, {{partition_id(0), offset(4), 1 << 20}}});
    got = co_await fake->records().fetch(std::move(beyond));
    EXPECT_EQ(api::reason(got.topics.at(0).partitions.at(0).error),
              api::errc::offset_out_of_range);
}

TEST(FakeBackend, AppendedBatchesComeBackAtTheirOffsets) {
    fake_backend fake;
    fake.add_topic("t", 1);
    run_until_done(produce_then_fetch(&fake));
}

asio::awaitable<void> scripted_calls(fake_backend* fake) {
    fake->script().fail_next(fake_call::create_queue, api::errc::storage_error, "disk", 2);
    for (int i = 0; i < 3; ++i) {
        api::queue_name q("q");
        auto made = co_await fake->queues().create_queue(std::move(q), {}, {});
        if (i < 2) {
            EXPECT_FALSE(made.has_value());
            if (!made) {
                EXPECT_EQ(api::reason(made.error().code), api::errc::storage_error);
                EXPECT_EQ(made.error().message, "disk");
            }
        } else {
            EXPECT_TRUE(made.has_value());
        }
    }
    // Other calls are not touched by a script for another kind.
    api::queue_name q("q");
    auto listed = co_await fake->queues().get_queue(std::move(q));
    EXPECT_TRUE(listed.has_value());
}

TEST(FakeBackend, AScriptedFailureHitsTheNextCallsOfItsKindOnly) {
    fake_backend fake;
    run_until_done(scripted_calls(&fake));
    EXPECT_EQ(fake.script().count(fake_call::create_queue), 3u);
    EXPECT_EQ(fake.script().args_of(fake_call::get_queue), std::vector<std::string>{"q"});
    EXPECT_EQ(to_string(fake.script().calls().front().call), "create_queue");
}

asio::awaitable<void> delayed_describe(fake_backend* fake) {
    const auto start = std::chrono::steady_clock::now();
    auto d = co_await fake->topics().describe(topic_name("t"));
    EXPECT_TRUE(d.has_value());
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
}

TEST(FakeBackend, AScriptedDelayHoldsTheAnswer) {
    fake_backend fake;
    fake.add_topic("t", 1);
    fake.script().delay_next(fake_call::describe_topic, std::chrono::milliseconds(20));
    run_until_done(delayed_describe(&fake));
}

}  // namespace
}  // namespace sluice::gateway::testing
