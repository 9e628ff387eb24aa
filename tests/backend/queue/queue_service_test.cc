// The queue service over the native backend on the in-memory file system with a manual clock:
// the lifecycle, crashes (what a power loss leaves, reopened), receipt handles, FIFO
// deduplication, dead-letter queues, move tasks, and records written by Kafka producers.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "backend/io/memory_file_system.h"
#include "backend/native/native_backend.h"
#include "protocol/kafka/record_batch_builder.h"
#include "tests/backend/support.h"

namespace sluice::backend::queue {
namespace {
namespace asio = boost::asio;
using api::queue_name;

class QueueServiceTest : public ::testing::Test {
protected:
    std::shared_ptr<io::memory_file_system> fs = std::make_shared<io::memory_file_system>();
    test::manual_clock clock;
    std::unique_ptr<asio::io_context> io = std::make_unique<asio::io_context>();
    std::unique_ptr<native::native_backend> be;
    /// queue_settings::leased_receives (upstream mode's), leases one offset ahead.
    bool leased = false;

    void SetUp() override { open(); }
    void TearDown() override { shut(); }

    void open() {
        native::native_options o;
        o.log.data_dir = "/data";
        o.log.fs = fs;
        o.log.clock = clock.fn();
        o.log.retention_check_interval = std::chrono::milliseconds(0);
        o.log.compaction_check_interval = std::chrono::milliseconds(0);
        o.log.flush_threads = 1;
        o.blocking_threads = 1;
        o.queues.tail_wait = std::chrono::milliseconds(20);
        o.queues.leased_receives = leased;
        o.queues.lease_ahead = 1;
        o.queues.lease_slack_ms = 2000;
        be = native::native_backend::open(std::move(o));
        io = std::make_unique<asio::io_context>();
        be->start(io->get_executor());
    }

    /// Shuts down as run_server does: stop, stop the io threads, close, then the coroutines'
    /// frames go (they hold references into the backend) before the backend does.
    void shut() {
        if (!be) {
            return;
        }
        be->stop();
        io->stop();
        be->close();
        io.reset();
        be.reset();
    }

    /// What a power loss now would leave, reopened.
    void crash_and_reopen() {
        auto survived = fs->crash_copy();
        shut();
        fs = survived;
        open();
    }

    /// Runs `a` on the backend's io_context until it completes (bounded).
    template <typename T>
    T run(asio::awaitable<T> a) {
        return test::run_on(*io, std::move(a));
    }

    api::queues& queues() { return be->queues(); }

    /// Runs the io_context until `done()` holds (bounded); false at the bound.
    template <typename Pred>
    bool run_until(Pred done) {
        io->restart();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!done()) {
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
            io->run_one_for(std::chrono::milliseconds(10));
        }
        return true;
    }

    void create(const std::string& name, api::attribute_map attrs = {}) {
        auto r = run(queues().create_queue(queue_name(name), std::move(attrs), {}));
        ASSERT_TRUE(r) << r.error().message;
    }

    std::vector<api::sent_message> send(const std::string& q, std::vector<std::string> bodies,
                                        std::optional<std::string> group = std::nullopt) {
        std::vector<api::outgoing_message> msgs;
        for (auto& b : bodies) {
            api::outgoing_message m;
            m.body = std::move(b);
            m.group_id = group;
            msgs.push_back(std::move(m));
        }
        auto r = run(queues().send_messages(queue_name(q), std::move(msgs)));
        EXPECT_TRUE(r) << r.error().message;
        return r ? *r : std::vector<api::sent_message>{};
    }

    std::vector<api::received_message> receive(const std::string& q, int max, int visibility_s,
                                               int wait_s = 2) {
        api::receive_request req;
        req.queue = queue_name(q);
        req.max_messages = max;
        req.visibility_timeout = std::chrono::seconds(visibility_s);
        req.wait = std::chrono::seconds(wait_s);
        auto r = run(queues().receive_messages(std::move(req)));
        EXPECT_TRUE(r) << r.error().message;
        return r ? *r : std::vector<api::received_message>{};
    }

    std::vector<api::backend_error> remove(const std::string& q, std::vector<std::string> handles) {
        auto r = run(queues().delete_messages(queue_name(q), std::move(handles)));
        EXPECT_TRUE(r) << r.error().message;
        return r ? *r : std::vector<api::backend_error>{};
    }
};

std::vector<std::string> bodies(const std::vector<api::received_message>& ms) {
    std::vector<std::string> out;
    for (const auto& m : ms) {
        out.push_back(m.body);
    }
    return out;
}

TEST_F(QueueServiceTest, SendReceiveDeleteLifecycle) {
    create("jobs");
    auto sent = send("jobs", {"a", "b"});
    ASSERT_EQ(sent.size(), 2u);
    EXPECT_FALSE(sent[0].error.code);

    auto got = receive("jobs", 10, 30);
    ASSERT_EQ(bodies(got), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(got[0].message_id, sent[0].message_id);
    EXPECT_EQ(got[0].receive_count, 1);

    auto deleted = remove("jobs", {got[0].receipt_handle, got[1].receipt_handle});
    EXPECT_FALSE(deleted[0].code);
    EXPECT_FALSE(deleted[1].code);
    clock.advance(31000);
    EXPECT_TRUE(receive("jobs", 10, 30, 0).empty());
}

TEST_F(QueueServiceTest, AfterACrashDeletedMessagesStayDeletedAndReceivedOnesWaitForTheirTimeout) {
    create("jobs");
    send("jobs", {"deleted", "received", "untouched"});
    auto first = receive("jobs", 1, 30);
    ASSERT_EQ(bodies(first), (std::vector<std::string>{"deleted"}));
    remove("jobs", {first[0].receipt_handle});
    auto second = receive("jobs", 1, 30);
    ASSERT_EQ(bodies(second), (std::vector<std::string>{"received"}));

    crash_and_reopen();

    EXPECT_EQ(bodies(receive("jobs", 10, 120)), (std::vector<std::string>{"untouched"}));
    clock.advance(30000);
    auto again = receive("jobs", 10, 30);
    ASSERT_EQ(bodies(again), (std::vector<std::string>{"received"}));
    EXPECT_EQ(again[0].receive_count, 2);
    // The handle from before the crash is stale, the new one deletes.
    EXPECT_FALSE(remove("jobs", {again[0].receipt_handle})[0].code);
    clock.advance(60000);
    EXPECT_TRUE(receive("jobs", 10, 30, 0).empty());
}

TEST_F(QueueServiceTest, AReceiveLostUnderALeaseHoldsItsMessageUntilTheLeaseEnds) {
    shut();
    leased = true;
    open();
    create("jobs");
    send("jobs", {"stored", "unstored", "c", "d"});
    // The first receive waits for a lease (offsets below 2, 32 s); the second is answered
    // under it and a power loss takes its record.
    auto first = receive("jobs", 1, 30);
    ASSERT_EQ(bodies(first), (std::vector<std::string>{"stored"}));
    auto second = receive("jobs", 1, 30);
    ASSERT_EQ(bodies(second), (std::vector<std::string>{"unstored"}));

    crash_and_reopen();

    // Past the lease at once; below it, "unstored" (no stored receive) and "stored" (its
    // stored timeout ends first) wait for the lease's end: nothing is in flight twice.
    EXPECT_EQ(bodies(receive("jobs", 10, 120, 0)), (std::vector<std::string>{"c", "d"}));
    // The lost receive's handle deletes its message (the newest receive of it).
    EXPECT_FALSE(remove("jobs", {second[0].receipt_handle})[0].code);
    clock.advance(31000);
    EXPECT_TRUE(receive("jobs", 10, 30, 0).empty());
    clock.advance(1000);
    auto again = receive("jobs", 10, 30, 0);
    ASSERT_EQ(bodies(again), (std::vector<std::string>{"stored"}));
    EXPECT_EQ(again[0].receive_count, 2);
}

TEST_F(QueueServiceTest, AfterACleanStopNothingWaitsForALease) {
    shut();
    leased = true;
    open();
    create("jobs");
    send("jobs", {"a", "b", "c"});
    auto first = receive("jobs", 1, 30);
    auto second = receive("jobs", 1, 30);
    ASSERT_EQ(bodies(second), (std::vector<std::string>{"b"}));

    shut();
    open();

    // "b"'s record was stored at the stop: in flight for its own timeout, no longer.
    EXPECT_EQ(bodies(receive("jobs", 10, 120, 0)), (std::vector<std::string>{"c"}));
    clock.advance(30000);
    EXPECT_EQ(bodies(receive("jobs", 10, 30, 0)), (std::vector<std::string>{"a", "b"}));
}

TEST_F(QueueServiceTest, ForgedAndForeignReceiptHandlesAreInvalid) {
    create("a");
    create("b");
    send("a", {"x"});
    auto got = receive("a", 1, 30);
    ASSERT_EQ(got.size(), 1u);
    std::string forged = got[0].receipt_handle;
    forged[10] = forged[10] == 'A' ? 'B' : 'A';

    auto r = remove("a", {forged, "not-a-handle", got[0].receipt_handle});
    EXPECT_EQ(api::reason(r[0].code), api::errc::receipt_handle_invalid);
    EXPECT_EQ(api::reason(r[1].code), api::errc::receipt_handle_invalid);
    EXPECT_FALSE(r[2].code);
    auto other = remove("b", {got[0].receipt_handle});
    EXPECT_EQ(api::reason(other[0].code), api::errc::receipt_handle_invalid);
}

TEST_F(QueueServiceTest, FifoDeduplicatesWithinTheWindowAcrossARestart) {
    create("orders.fifo", {{"FifoQueue", "true"}, {"ContentBasedDeduplication", "true"}});
    auto first = send("orders.fifo", {"same body"}, "g");
    auto dup = send("orders.fifo", {"same body"}, "g");
    ASSERT_TRUE(first[0].sequence_number);
    EXPECT_EQ(dup[0].message_id, first[0].message_id);

    crash_and_reopen();
    EXPECT_EQ(send("orders.fifo", {"same body"}, "g")[0].message_id, first[0].message_id);

    clock.advance(300001);
    const auto later = send("orders.fifo", {"same body"}, "g");
    EXPECT_NE(later[0].message_id, first[0].message_id);
    // Two messages were stored, in order.
    auto a = receive("orders.fifo", 1, 30);
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].message_id, first[0].message_id);
    remove("orders.fifo", {a[0].receipt_handle});
    auto b = receive("orders.fifo", 1, 30);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].message_id, later[0].message_id);
}

TEST_F(QueueServiceTest, FifoRequiresAGroupAndADeduplicationId) {
    create("plain.fifo", {{"FifoQueue", "true"}});
    api::outgoing_message m;
    m.body = "x";
    std::vector<api::outgoing_message> one{m};
    auto r = run(queues().send_messages(queue_name("plain.fifo"), one));
    ASSERT_TRUE(r);
    EXPECT_EQ(api::reason((*r)[0].error.code), api::errc::missing_parameter);

    one[0].group_id = "g";
    r = run(queues().send_messages(queue_name("plain.fifo"), one));
    EXPECT_EQ(api::reason((*r)[0].error.code), api::errc::invalid_parameter_value);
}

TEST_F(QueueServiceTest, MessagesPastMaxReceiveCountMoveToTheDeadLetterQueueAndBack) {
    create("dlq");
    create("work", {{"RedrivePolicy",
                     R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":1})"}});
    send("work", {"poison"});
    ASSERT_EQ(receive("work", 1, 0).size(), 1u);  // received once, visible again at once

    EXPECT_TRUE(receive("work", 1, 30, 0).empty());  // the second receive moves it
    auto dead = receive("dlq", 1, 30);
    ASSERT_EQ(bodies(dead), (std::vector<std::string>{"poison"}));
    EXPECT_EQ(dead[0].dead_letter_source_arn, "arn:aws:sqs:us-east-1:000000000000:work");
    auto sources = run(queues().dead_letter_source_queues(queue_name("dlq")));
    ASSERT_TRUE(sources);
    ASSERT_EQ(sources->size(), 1u);
    EXPECT_EQ((*sources)[0].value, "work");

    // Redrive: visible again in the DLQ, then moved back by a task.
    auto vis = run(queues().change_visibility(queue_name("dlq"), {{dead[0].receipt_handle, std::chrono::seconds(0)}}));
    ASSERT_TRUE(vis);
    auto task = run(queues().start_message_move_task("arn:aws:sqs:us-east-1:000000000000:dlq",
                                                     std::nullopt, std::nullopt));
    ASSERT_TRUE(task) << task.error().message;
    auto back = receive("work", 1, 30, 5);
    ASSERT_EQ(bodies(back), (std::vector<std::string>{"poison"}));
    std::vector<api::move_task> tasks;
    ASSERT_TRUE(run_until([&] {
        auto listed = run(queues().list_message_move_tasks("arn:aws:sqs:us-east-1:000000000000:dlq", 10));
        tasks = listed ? *listed : std::vector<api::move_task>{};
        return tasks.size() == 1 && tasks[0].status == "COMPLETED";
    }));
    EXPECT_EQ(tasks[0].moved, 1);
    EXPECT_EQ(tasks[0].to_move, 1);
}

TEST_F(QueueServiceTest, PurgeDeletesWhatIsThereAndOnlyOncePerMinute) {
    create("p");
    send("p", {"a", "b"});
    auto r = run(queues().purge_queue(queue_name("p")));
    ASSERT_TRUE(r);
    send("p", {"after"});

    EXPECT_EQ(bodies(receive("p", 10, 30)), (std::vector<std::string>{"after"}));
    auto again = run(queues().purge_queue(queue_name("p")));
    ASSERT_FALSE(again);
    EXPECT_EQ(api::reason(again.error().code), api::errc::purge_queue_in_progress);
}

TEST_F(QueueServiceTest, RecordsOfKafkaProducersAreMessages) {
    create("mixed");
    protocol::kafka::record_batch_builder b;
    const std::string value = "from kafka";
    const std::string hv = "blue";
    std::vector<protocol::kafka::header_view> headers{{"colour", protocol::as_bytes(hv)}};
    b.add(std::nullopt, protocol::as_bytes(value), clock.now(), headers);
    auto batch = b.finish();
    ASSERT_TRUE(batch);
    api::produce_request req;
    req.topics.push_back({topic_name("mixed"), {{partition_id(0), batch->mutable_view()}}});
    auto produced = run(be->records().produce(std::move(req)));
    ASSERT_FALSE(produced.topics[0].partitions[0].error);

    auto got = receive("mixed", 1, 30);
    ASSERT_EQ(bodies(got), (std::vector<std::string>{"from kafka"}));
    ASSERT_EQ(got[0].attributes.size(), 1u);
    EXPECT_EQ(got[0].attributes[0].name, "colour");
    EXPECT_EQ(got[0].attributes[0].data_type, "String");
    EXPECT_EQ(got[0].attributes[0].value, "blue");
}

TEST_F(QueueServiceTest, ALongPollReturnsWhenAMessageArrives) {
    create("lp");
    api::receive_request req;
    req.queue = queue_name("lp");
    req.wait = std::chrono::seconds(20);
    std::optional<api::backend_result<std::vector<api::received_message>>> got;
    asio::co_spawn(*io, queues().receive_messages(std::move(req)),
                   [&](std::exception_ptr, auto r) { got.emplace(std::move(r)); });
    io->restart();
    io->poll();
    EXPECT_FALSE(got);  // parked

    send("lp", {"wake up"});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!got && std::chrono::steady_clock::now() < deadline) {
        io->run_one_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(got);
    ASSERT_TRUE(*got);
    EXPECT_EQ(bodies(**got), (std::vector<std::string>{"wake up"}));
}

TEST_F(QueueServiceTest, DeletingAQueueDeletesItsTopicAndTheNameRestsAMinute) {
    create("gone");
    auto del = run(queues().delete_queue(queue_name("gone")));
    ASSERT_TRUE(del);
    EXPECT_FALSE(run(be->topics().describe(topic_name("gone"))));
    auto again = run(queues().create_queue(queue_name("gone"), {}, {}));
    ASSERT_FALSE(again);
    EXPECT_EQ(api::reason(again.error().code), api::errc::queue_deleted_recently);
    clock.advance(60000);
    EXPECT_TRUE(run(queues().create_queue(queue_name("gone"), {}, {})));
}

TEST_F(QueueServiceTest, AnExistingTopicIsAdoptedAsAQueue) {
    api::new_topic t;
    t.name = topic_name("events");
    auto made = run(be->topics().create(std::move(t)));
    ASSERT_TRUE(made);

    auto q = run(queues().get_queue(queue_name("events")));
    ASSERT_TRUE(q);
    auto attrs = run(queues().get_attributes(queue_name("events"), {"All"}));
    ASSERT_TRUE(attrs);
    EXPECT_EQ(attrs->at("VisibilityTimeout"), "30");
    EXPECT_EQ(attrs->at("QueueArn"), "arn:aws:sqs:us-east-1:000000000000:events");
}

TEST_F(QueueServiceTest, TopicsOfSluicesOwnStateAreNoQueues) {
    api::new_topic t;
    t.name = topic_name("_sluice_rest_consumers");
    ASSERT_TRUE(run(be->topics().create(std::move(t))));
    create("work");  // makes __queue_state too

    auto listed = run(queues().list_queues(""));
    ASSERT_EQ(listed.size(), 1U);
    EXPECT_EQ(listed[0].value, "work");
    for (const char* name : {"_sluice_rest_consumers", "__queue_state"}) {
        auto q = run(queues().get_queue(queue_name(name)));
        ASSERT_FALSE(q) << name;
        EXPECT_EQ(api::reason(q.error().code), api::errc::queue_does_not_exist);
        auto del = run(queues().delete_queue(queue_name(name)));
        ASSERT_FALSE(del) << name;
        EXPECT_EQ(api::reason(del.error().code), api::errc::queue_does_not_exist);
    }
    for (const char* name : {"_sluice_rest_consumers", "_sluice_new", "__consumer_offsets"}) {
        auto made = run(queues().create_queue(queue_name(name), {}, {}));
        ASSERT_FALSE(made) << name;
        EXPECT_EQ(api::reason(made.error().code), api::errc::invalid_parameter_value);
    }
    EXPECT_TRUE(run(be->topics().describe(topic_name("_sluice_rest_consumers"))));
}

TEST_F(QueueServiceTest, AMoveTaskSendsMessagesBackOnlyToQueuesThatRedriveHere) {
    create("dlq");
    create("victim");
    create("src", {{"RedrivePolicy",
                    R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq",)"
                    R"("maxReceiveCount":1})"}});
    // A record in the dead-letter queue's topic whose source header names "victim", which
    // does not redrive into "dlq" (any producer to the topic can write that header).
    protocol::kafka::record_batch_builder b;
    const std::string arn = "arn:aws:sqs:us-east-1:000000000000:victim";
    std::vector<protocol::kafka::header_view> headers{
        {"sqs:dlq-source", protocol::as_bytes(arn)}};
    const std::string body = "forged";
    b.add(std::nullopt, protocol::as_bytes(body), clock.now(), headers);
    auto batch = b.finish();
    ASSERT_TRUE(batch);
    api::produce_request req;
    req.topics.push_back({topic_name("dlq"), {{partition_id(0), batch->mutable_view()}}});
    auto produced = run(be->records().produce(std::move(req)));
    ASSERT_FALSE(produced.topics[0].partitions[0].error);

    auto task = run(queues().start_message_move_task("arn:aws:sqs:us-east-1:000000000000:dlq",
                                                     std::nullopt, std::nullopt));
    ASSERT_TRUE(task) << task.error().message;
    std::optional<api::move_task> seen;
    ASSERT_TRUE(run_until([&] {
        seen = queues().find_message_move_task(*task);
        return seen && seen->status != "RUNNING";
    }));
    EXPECT_EQ(seen->status, "FAILED");
    ASSERT_TRUE(seen->failure_reason);
    EXPECT_NE(seen->failure_reason->find("does not name"), std::string::npos);
    EXPECT_TRUE(receive("victim", 10, 30, 0).empty());
}

}  // namespace
}  // namespace sluice::backend::queue
