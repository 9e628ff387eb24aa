// Client-level contract: the consumer (backend/api/client.h api::consumer). Manual assignment
// with positions from the reset policy, seeks (offset, earliest, latest, timestamp), records
// as produced (key, value, headers, timestamp), long polls woken by a produce and bounded by
// max_wait; group membership (partitions split and moved by rebalances, revoke hook, on_change,
// commits and committed offsets, a new member resuming at the commit, pattern subscriptions,
// close with leave), and reset none. Tests may share a cluster: every name is unique.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "tests/backend/contract/client_backends.h"

namespace sluice::backend::contract {
namespace {

using namespace std::chrono_literals;

struct consumer_suite_names {
    template <typename F>
    static std::string GetName(int) {
        return std::string(F::name);
    }
};

/// A record as the sink saw it (the views die with the poll).
struct seen_record {
    std::string topic;
    std::int32_t partition = -1;
    std::int64_t offset = -1;
    std::int64_t timestamp = -1;
    std::optional<std::string> key;
    std::optional<std::string> value;
    std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

std::optional<std::string> text_of(const std::optional<protocol::bytes_view>& b) {
    if (!b) {
        return std::nullopt;
    }
    return std::string(reinterpret_cast<const char*>(b->data()), b->size());
}

/// What one poll gave.
struct poll_answer {
    api::backend_result<std::vector<api::polled_partition>> outcome;
    std::vector<seen_record> records;
};

/// Polls into `out` (a named coroutine: nothing lives in a lambda's captures).
boost::asio::awaitable<poll_answer> poll_into(std::shared_ptr<api::consumer> c,
                                              api::poll_limits limits) {
    poll_answer out;
    api::message_sink sink = [&out](const topic_name& t, partition_id p,
                                    const protocol::kafka::record_view& r) {
        seen_record s;
        s.topic = t.value;
        s.partition = p.value;
        s.offset = r.offset;
        s.timestamp = r.timestamp;
        s.key = text_of(r.key);
        s.value = text_of(r.value);
        for (const auto& h : r.headers) {
            s.headers.emplace_back(std::string(h.key), text_of(h.value));
        }
        out.records.push_back(std::move(s));
        return true;
    };
    out.outcome = co_await c->poll(limits, sink);
    co_return out;
}

boost::asio::awaitable<void> record_revoke(
    std::shared_ptr<std::vector<api::assignment_state>> log, api::assignment_state held) {
    log->push_back(std::move(held));
    co_return;
}

/// A revoke hook that waits for `gate` to be cancelled.
boost::asio::awaitable<void> wait_at(std::shared_ptr<boost::asio::steady_timer> gate,
                                     std::shared_ptr<bool> entered) {
    *entered = true;
    boost::system::error_code ec;
    co_await gate->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
}

template <typename F>
class ClientConsumerContract : public ClientContract<F> {
protected:
    void TearDown() override {
        for (auto& c : consumers_) {
            c->close(true);
        }
        this->run_until([&] {
            return std::all_of(consumers_.begin(), consumers_.end(),
                               [](const auto& c) { return c->closed(); });
        });
        consumers_.clear();
        ClientContract<F>::TearDown();
    }

    std::string make_topic(std::string_view stem, std::int32_t partitions) {
        auto name = this->unique_topic(stem);
        create(name, partitions);
        return name;
    }

    void create(const std::string& name, std::int32_t partitions) {
        api::new_topic spec{topic_name(name), partitions, {}, false};
        auto created = this->run(this->admin().create_topic(std::move(spec)));
        ASSERT_TRUE(created) << "create " << name << ": " << created.error().text();
    }

    std::vector<api::delivery> send(const std::string& topic,
                                    std::vector<api::outgoing_record> recs) {
        auto sent = this->run(this->producer().send(topic_name(topic), std::move(recs), {}));
        EXPECT_TRUE(sent) << sent.error().text();
        return sent ? *sent : std::vector<api::delivery>{};
    }

    static api::outgoing_record rec(std::string v, std::optional<std::int32_t> partition = 0,
                                    std::int64_t ts = -1) {
        api::outgoing_record r;
        r.value = std::move(v);
        r.partition = partition;
        r.timestamp = ts;
        return r;
    }

    std::shared_ptr<api::consumer> open(std::optional<std::string> group,
                                        api::offset_reset reset = api::offset_reset::earliest) {
        api::consumer_options o;
        if (group) {
            o.group = sluice::group_id(*group);
        }
        o.reset = reset;
        o.session_timeout_ms = member_session_timeout_ms<F>();
        o.client = api::client_info{"contract", "127.0.0.1"};
        auto c = this->client().open_consumer(std::move(o), this->executor());
        consumers_.push_back(c);
        return c;
    }

    poll_answer poll(const std::shared_ptr<api::consumer>& c,
                     std::chrono::milliseconds wait = 0ms) {
        api::poll_limits l;
        l.max_wait = wait;
        return this->run(poll_into(c, l));
    }

    /// Polls until `n` records came (each poll waits up to 500 ms), at most 20 s.
    std::vector<seen_record> poll_records(const std::shared_ptr<api::consumer>& c, std::size_t n) {
        std::vector<seen_record> all;
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (all.size() < n && std::chrono::steady_clock::now() < deadline) {
            auto got = poll(c, 500ms);
            EXPECT_TRUE(got.outcome) << got.outcome.error().text();
            all.insert(all.end(), got.records.begin(), got.records.end());
        }
        return all;
    }

    /// Runs until the consumer holds a stable assignment meeting `pred`.
    template <typename Pred>
    bool settle(const std::shared_ptr<api::consumer>& c, Pred pred) {
        return this->run_until([&] {
            const auto s = c->assignment();
            return s.stable && pred(s);
        });
    }

    static api::topic_partition tp(const std::string& t, std::int32_t p) {
        return api::topic_partition{topic_name(t), partition_id(p)};
    }

    std::vector<std::shared_ptr<api::consumer>> consumers_;
};
TYPED_TEST_SUITE(ClientConsumerContract, client_factories, consumer_suite_names);

TYPED_TEST(ClientConsumerContract, AssignedPartitionHandsOutRecordsAsProduced) {
    auto t = this->make_topic("records", 1);
    api::outgoing_record r;
    r.key = "k1";
    r.value = "v1";
    r.partition = 0;
    r.timestamp = 1000;
    r.headers = {{"h1", std::string("x")}, {"h2", std::nullopt}};
    api::outgoing_record tomb;
    tomb.key = "k2";
    tomb.partition = 0;
    tomb.timestamp = 2000;
    this->send(t, {r, tomb});

    auto c = this->open(std::nullopt);
    c->assign({this->tp(t, 0)});
    auto got = this->poll_records(c, 2);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].topic, t);
    EXPECT_EQ(got[0].partition, 0);
    EXPECT_EQ(got[0].offset, 0);
    EXPECT_EQ(got[0].key, "k1");
    EXPECT_EQ(got[0].value, "v1");
    EXPECT_EQ(got[0].timestamp, 1000);
    ASSERT_EQ(got[0].headers.size(), 2u);
    EXPECT_EQ(got[0].headers[0].first, "h1");
    EXPECT_EQ(got[0].headers[0].second, "x");
    EXPECT_EQ(got[0].headers[1].first, "h2");
    EXPECT_EQ(got[0].headers[1].second, std::nullopt);
    EXPECT_EQ(got[1].offset, 1);
    EXPECT_EQ(got[1].key, "k2");
    EXPECT_EQ(got[1].value, std::nullopt);
    EXPECT_EQ(got[1].timestamp, 2000);
    const auto pos = c->positions();
    ASSERT_EQ(pos.size(), 1u);
    EXPECT_EQ(pos.at(this->tp(t, 0)).value, 2);
}

TYPED_TEST(ClientConsumerContract, PositionsStartByResetAndMoveWithSeeks) {
    auto t = this->make_topic("seeks", 1);
    this->send(t, {this->rec("a", 0, 1000), this->rec("b", 0, 2000), this->rec("c", 0, 3000)});

    auto latest = this->open(std::nullopt, api::offset_reset::latest);
    latest->assign({this->tp(t, 0)});
    auto none = this->poll(latest);
    ASSERT_TRUE(none.outcome) << none.outcome.error().text();
    EXPECT_TRUE(none.records.empty());
    EXPECT_EQ(latest->positions().at(this->tp(t, 0)).value, 3);

    latest->seek({{this->tp(t, 0), offset(1)}});
    auto from_one = this->poll_records(latest, 2);
    ASSERT_EQ(from_one.size(), 2u);
    EXPECT_EQ(from_one[0].value, "b");
    EXPECT_EQ(from_one[1].value, "c");

    auto at_time = this->run(latest->seek_to({this->tp(t, 0)},
                                             {api::offset_spec::kind::timestamp, 1500}));
    ASSERT_TRUE(at_time) << at_time.error().text();
    if (const auto why = stand_in_lacks<TypeParam>("offsets_by_timestamp"); why.empty()) {
        EXPECT_EQ(latest->positions().at(this->tp(t, 0)).value, 1);
    }  // else: not checked, `why` says why
    // No record at or after the time: the end of the partition.
    at_time = this->run(latest->seek_to({this->tp(t, 0)},
                                        {api::offset_spec::kind::timestamp, 9000}));
    ASSERT_TRUE(at_time);
    EXPECT_EQ(latest->positions().at(this->tp(t, 0)).value, 3);

    auto earliest =
        this->run(latest->seek_to({this->tp(t, 0)}, {api::offset_spec::kind::earliest, -1}));
    ASSERT_TRUE(earliest);
    auto all = this->poll_records(latest, 3);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0].value, "a");

    auto end = this->run(latest->seek_to({this->tp(t, 0)}, {api::offset_spec::kind::latest, -1}));
    ASSERT_TRUE(end);
    EXPECT_EQ(latest->positions().at(this->tp(t, 0)).value, 3);

    auto missing =
        this->run(latest->seek_to({this->tp(t, 7)}, {api::offset_spec::kind::latest, -1}));
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().reason(), api::errc::unknown_topic_or_partition);
}

TYPED_TEST(ClientConsumerContract, LongPollIsWokenByAProduce) {
    auto t = this->make_topic("wake", 1);
    auto c = this->open(std::nullopt, api::offset_reset::latest);
    c->assign({this->tp(t, 0)});
    ASSERT_TRUE(this->poll(c).outcome);  // the position is resolved: the end

    api::poll_limits l;
    l.max_wait = 15s;
    auto answer = std::make_shared<std::optional<poll_answer>>();
    const auto started = std::chrono::steady_clock::now();
    boost::asio::co_spawn(*this->io_, poll_into(c, l),
                          [answer](std::exception_ptr, poll_answer a) {
                              answer->emplace(std::move(a));
                          });
    // Let the poll park (it cannot finish: nothing is there), then produce.
    EXPECT_FALSE(this->run_until([&] { return answer->has_value(); }, 300ms));
    this->send(t, {this->rec("late")});
    ASSERT_TRUE(this->run_until([&] { return answer->has_value(); }));
    EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
    ASSERT_TRUE((*answer)->outcome);
    ASSERT_EQ((*answer)->records.size(), 1u);
    EXPECT_EQ((*answer)->records[0].value, "late");
}

TYPED_TEST(ClientConsumerContract, PollHonoursMaxWaitWhenNothingArrives) {
    auto t = this->make_topic("idle", 2);
    auto c = this->open(std::nullopt, api::offset_reset::latest);
    c->assign({this->tp(t, 0), this->tp(t, 1)});
    const auto started = std::chrono::steady_clock::now();
    auto got = this->poll(c, 400ms);
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_TRUE(got.outcome) << got.outcome.error().text();
    EXPECT_TRUE(got.records.empty());
    EXPECT_GE(took, 350ms);
    EXPECT_LT(took, 5s);
    ASSERT_EQ(got.outcome->size(), 2u);
    EXPECT_FALSE((*got.outcome)[0].error);
}

TYPED_TEST(ClientConsumerContract, WithoutAGroupCommitsAreRefused) {
    auto t = this->make_topic("nogroup", 1);
    auto c = this->open(std::nullopt);
    c->assign({this->tp(t, 0)});
    EXPECT_EQ(c->assignment().generation, -1);
    EXPECT_TRUE(c->assignment().stable);
    auto done = this->run(c->commit(std::nullopt));
    ASSERT_FALSE(done);
    EXPECT_EQ(done.error().reason(), api::errc::invalid_request);
}

TYPED_TEST(ClientConsumerContract, ResetNoneReportsOffsetOutOfRange) {
    auto t = this->make_topic("nonereset", 2);
    this->send(t, {this->rec("a")});
    auto c = this->open(this->unique_topic("g-none"), api::offset_reset::none);
    c->assign({this->tp(t, 0), this->tp(t, 1)});
    c->seek({{this->tp(t, 1), offset(0)}});  // empty: a poll of it alone would park
    // The partition without a position is reported at once, not after max_wait.
    const auto started = std::chrono::steady_clock::now();
    auto got = this->poll(c, 10s);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
    ASSERT_TRUE(got.outcome) << got.outcome.error().text();
    ASSERT_EQ(got.outcome->size(), 2u);
    EXPECT_EQ((*got.outcome)[0].tp, this->tp(t, 0));
    EXPECT_EQ((*got.outcome)[0].error.reason(), api::errc::offset_out_of_range);
    EXPECT_FALSE((*got.outcome)[1].error);
    EXPECT_TRUE(got.records.empty());
    EXPECT_FALSE(c->positions().contains(this->tp(t, 0)));
    // A seek gives it a position.
    c->seek({{this->tp(t, 0), offset(0)}});
    auto after = this->poll_records(c, 1);
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0].value, "a");
}

TYPED_TEST(ClientConsumerContract, TwoMembersSplitPartitionsAndARebalanceMovesThem) {
    auto t = this->make_topic("split", 4);
    const auto group = this->unique_topic("g-split");
    auto a = this->open(group);
    auto revoked = std::make_shared<std::vector<api::assignment_state>>();
    a->on_revoke([revoked](const api::assignment_state& held) {
        return record_revoke(revoked, held);
    });
    auto changes = std::make_shared<int>(0);
    a->on_change([changes] { ++*changes; });
    a->subscribe({topic_name(t)});
    ASSERT_TRUE(this->settle(a, [](const auto& s) { return s.partitions.size() == 4; }));
    // on_change runs on the consumer's executor, soon after the change.
    EXPECT_TRUE(this->run_until([&] { return *changes > 0; }));
    const auto first = a->assignment();
    EXPECT_GE(first.generation, 0);
    EXPECT_FALSE(first.member_id.empty());
    EXPECT_EQ(first.topics, std::vector<topic_name>{topic_name(t)});
    EXPECT_EQ(a->subscribed_topics(), std::vector<topic_name>{topic_name(t)});

    auto b = this->open(group);
    b->subscribe({topic_name(t)});
    ASSERT_TRUE(this->run_until([&] {
        const auto sa = a->assignment();
        const auto sb = b->assignment();
        return sa.stable && sb.stable && sa.generation == sb.generation &&
               sa.partitions.size() + sb.partitions.size() == 4 && !sa.partitions.empty() &&
               !sb.partitions.empty();
    }));
    std::set<api::topic_partition> all;
    for (const auto& p : a->assignment().partitions) {
        all.insert(p);
    }
    for (const auto& p : b->assignment().partitions) {
        all.insert(p);
    }
    EXPECT_EQ(all.size(), 4u);
    // The revoke hook ran with what A held before, in the old generation.
    ASSERT_FALSE(revoked->empty());
    EXPECT_EQ(revoked->front().partitions.size(), 4u);
    EXPECT_EQ(revoked->front().generation, first.generation);
    EXPECT_GT(a->assignment().generation, first.generation);
}

TYPED_TEST(ClientConsumerContract, CommitsAreCommittedAndANewMemberResumesThere) {
    auto t = this->make_topic("resume", 1);
    const auto group = this->unique_topic("g-resume");
    this->send(t, {this->rec("a"), this->rec("b"), this->rec("c")});
    auto a = this->open(group);
    a->subscribe({topic_name(t)});
    ASSERT_TRUE(this->settle(a, [](const auto& s) { return s.partitions.size() == 1; }));
    ASSERT_EQ(this->poll_records(a, 3).size(), 3u);
    auto done = this->run(a->commit(std::nullopt));
    ASSERT_TRUE(done) << done.error().text();
    ASSERT_EQ(done->size(), 1u);
    EXPECT_EQ((*done)[0].next.value, 3);
    auto seen = this->run(a->committed({}));
    ASSERT_TRUE(seen) << seen.error().text();
    ASSERT_EQ(seen->size(), 1u);
    EXPECT_EQ((*seen)[0].next.value, 3);

    // An explicit commit with metadata.
    auto explicit_commit = this->run(
        a->commit(std::vector<api::offset_commit>{{this->tp(t, 0), offset(2), std::string("m")}}));
    ASSERT_TRUE(explicit_commit) << explicit_commit.error().text();
    seen = this->run(a->committed({this->tp(t, 0)}));
    ASSERT_TRUE(seen);
    EXPECT_EQ((*seen)[0].next.value, 2);
    EXPECT_EQ((*seen)[0].metadata, "m");

    a->close(true);
    ASSERT_TRUE(this->run_until([&] { return a->closed(); }));
    this->send(t, {this->rec("d")});
    auto b = this->open(group);
    b->subscribe({topic_name(t)});
    ASSERT_TRUE(this->settle(b, [](const auto& s) { return s.partitions.size() == 1; }));
    auto resumed = this->poll_records(b, 2);
    ASSERT_EQ(resumed.size(), 2u);
    EXPECT_EQ(resumed[0].offset, 2);
    EXPECT_EQ(resumed[0].value, "c");
    EXPECT_EQ(resumed[1].value, "d");
}

TYPED_TEST(ClientConsumerContract, CommitAfterTheGroupMovedOnFails) {
    auto t = this->make_topic("moved", 2);
    const auto group = this->unique_topic("g-moved");
    this->send(t, {this->rec("a")});
    auto a = this->open(group);
    // A's revoke hook holds A back: the group's rebalance times A out and goes on without it.
    auto gate = std::make_shared<boost::asio::steady_timer>(
        *this->io_, std::chrono::steady_clock::time_point::max());
    auto entered = std::make_shared<bool>(false);
    a->on_revoke([gate, entered](const api::assignment_state&) { return wait_at(gate, entered); });
    a->subscribe({topic_name(t)});
    ASSERT_TRUE(this->settle(a, [](const auto& s) { return s.partitions.size() == 2; }));
    ASSERT_EQ(this->poll_records(a, 1).size(), 1u);
    auto b = this->open(group);
    b->subscribe({topic_name(t)});
    ASSERT_TRUE(this->run_until([&] { return *entered; }));
    ASSERT_TRUE(this->settle(b, [](const auto& s) { return s.partitions.size() == 2; }));
    auto late = this->run(a->commit(std::nullopt));
    gate->cancel();
    ASSERT_FALSE(late);
    const auto why = late.error().reason();
    EXPECT_TRUE(why == api::errc::rebalance_in_progress || why == api::errc::illegal_generation ||
                why == api::errc::unknown_member_id)
        << late.error().text();
}

TYPED_TEST(ClientConsumerContract, PatternSubscriptionPicksUpANewTopic) {
    const auto stem = this->unique_topic("pat");
    this->create(stem + "-one", 1);
    auto c = this->open(this->unique_topic("g-pat"));
    ASSERT_FALSE(c->subscribe_pattern("(", nullptr));
    ASSERT_TRUE(c->subscribe_pattern(stem + "-.*", nullptr));
    EXPECT_EQ(c->subscribed_pattern(), stem + "-.*");
    ASSERT_TRUE(this->settle(c, [](const auto& s) { return s.partitions.size() == 1; }));
    this->create(stem + "-two", 2);
    ASSERT_TRUE(this->settle(c, [](const auto& s) { return s.partitions.size() == 3; }));
    EXPECT_EQ(c->assignment().topics.size(), 2u);
}

TYPED_TEST(ClientConsumerContract, CloseWithLeaveMovesThePartitionsAtOnce) {
    auto t = this->make_topic("leave", 2);
    const auto group = this->unique_topic("g-leave");
    auto a = this->open(group);
    auto b = this->open(group);
    a->subscribe({topic_name(t)});
    b->subscribe({topic_name(t)});
    ASSERT_TRUE(this->run_until([&] {
        const auto sa = a->assignment();
        const auto sb = b->assignment();
        return sa.stable && sb.stable && sa.partitions.size() == 1 && sb.partitions.size() == 1;
    }));
    a->close(true);
    // Well within the session timeout a member that did not leave would keep them for (6 s:
    // 5 s). A stand-in whose rebalance waits for the remaining members (session - 1 s): within
    // the session timeout and half a second.
    const std::chrono::milliseconds session(member_session_timeout_ms<TypeParam>());
    const std::chrono::milliseconds bound =
        stand_in_lacks<TypeParam>("prompt_rebalance").empty() ? session - 1s : session + 500ms;
    const auto started = std::chrono::steady_clock::now();
    ASSERT_TRUE(this->settle(b, [](const auto& s) { return s.partitions.size() == 2; }));
    EXPECT_LT(std::chrono::steady_clock::now() - started, bound);
    EXPECT_TRUE(this->run_until([&] { return a->closed(); }));
}

}  // namespace
}  // namespace sluice::backend::contract
