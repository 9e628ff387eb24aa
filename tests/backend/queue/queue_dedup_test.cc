// FIFO deduplication when a send's outcome is unknown: the queue service over the native
// backend's topics and records, seen through a records wrapper that can answer a produce with
// an error after storing it (a timeout, a cluster gone while the write was in flight), refuse
// it before storing it, or fail reads; its state in a state log held in memory.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "backend/api/errc.h"
#include "backend/io/memory_file_system.h"
#include "backend/native/native_backend.h"
#include "backend/queue/queue_service.h"
#include "tests/backend/support.h"

namespace sluice::backend::queue {
namespace {
namespace asio = boost::asio;
using api::queue_name;

/// The native records, with failures on demand.
class flaky_records final : public api::records {
public:
    explicit flaky_records(api::records& inner) : inner_(inner) {}

    int answer_failed_after_storing = 0;  // the next N produces store, then answer an error
    int refuse_before_storing = 0;        // the next N produces store nothing, answer an error
    bool fail_reads = false;              // fetches and offset lookups fail (cluster gone)

    api::awaitable<api::produce_result> produce(api::produce_request req) override {
        if (refuse_before_storing > 0) {
            --refuse_before_storing;
            co_return failed(req);
        }
        auto res = co_await inner_.produce(req);
        if (answer_failed_after_storing > 0) {
            --answer_failed_after_storing;
            co_return failed(req);
        }
        co_return res;
    }
    api::awaitable<api::fetch_result> fetch(api::fetch_request req) override {
        if (fail_reads) {
            api::fetch_result out;
            for (const auto& t : req.topics) {
                api::fetched_topic ft;
                ft.topic = t.topic;
                for (const auto& p : t.partitions) {
                    api::fetched_partition fp;
                    fp.partition = p.partition;
                    fp.error = api::backend_error(api::errc::backend_unavailable);
                    ft.partitions.push_back(std::move(fp));
                }
                out.topics.push_back(std::move(ft));
            }
            co_return out;
        }
        co_return co_await inner_.fetch(std::move(req));
    }
    api::awaitable<std::vector<api::found_offset>> list_offsets(std::vector<api::offset_query> q,
                                                                api::isolation i) override {
        if (fail_reads) {
            std::vector<api::found_offset> out(q.size());
            for (auto& f : out) {
                f.error = api::backend_error(api::errc::backend_unavailable);
            }
            co_return out;
        }
        co_return co_await inner_.list_offsets(std::move(q), i);
    }
    api::awaitable<std::vector<api::backend_result<offset>>> delete_records(
        std::vector<api::delete_records_request> reqs) override {
        co_return co_await inner_.delete_records(std::move(reqs));
    }
    std::int64_t parked_fetches() const override { return inner_.parked_fetches(); }

private:
    static api::produce_result failed(const api::produce_request& req) {
        api::produce_result out;
        for (const auto& t : req.topics) {
            api::produced_topic pt;
            pt.topic = t.topic;
            for (const auto& p : t.partitions) {
                api::produced_partition pp;
                pp.partition = p.partition;
                pp.error = api::backend_error(api::errc::request_timed_out);
                pt.partitions.push_back(std::move(pp));
            }
            out.topics.push_back(std::move(pt));
        }
        return out;
    }

    api::records& inner_;
};

/// A state log in memory: every append is durable at once, unless flushes are told to fail
/// (a state write the cluster did not acknowledge in time).
class memory_state_log final : public state_log {
public:
    bool fail_flushes = false;

    result<position> append(std::span<const encoded_record> records) override {
        std::lock_guard lock(mu_);
        end_ += static_cast<std::int64_t>(records.size());
        return position{end_};
    }
    asio::awaitable<result<void>> flush(position) override {
        if (fail_flushes) {
            co_return fail(api::errc::request_timed_out);
        }
        co_return result<void>{};
    }
    result<void> replay(const std::function<void(protocol::bytes_view,
                                                 std::optional<protocol::bytes_view>)>&) override {
        return {};
    }

private:
    std::mutex mu_;
    std::int64_t end_ = 0;
};

class QueueDedup : public ::testing::Test {
protected:
    std::shared_ptr<io::memory_file_system> fs = std::make_shared<io::memory_file_system>();
    test::manual_clock clock;
    std::unique_ptr<asio::io_context> io = std::make_unique<asio::io_context>();
    std::unique_ptr<native::native_backend> be;
    std::unique_ptr<flaky_records> records;
    memory_state_log log;
    std::unique_ptr<queue_service> service;

    void SetUp() override {
        native::native_options o;
        o.log.data_dir = "/data";
        o.log.fs = fs;
        o.log.clock = clock.fn();
        o.log.retention_check_interval = std::chrono::milliseconds(0);
        o.log.compaction_check_interval = std::chrono::milliseconds(0);
        o.log.flush_threads = 1;
        o.blocking_threads = 1;
        be = native::native_backend::open(std::move(o));
        be->start(io->get_executor());
        records = std::make_unique<flaky_records>(be->records());
        queue_settings s;
        s.tail_wait = std::chrono::milliseconds(20);
        service = std::make_unique<queue_service>(be->topics(), *records, log, s, clock.fn());
        service->load();
        service->start(io->get_executor());
        auto made = run(service->create_queue(queue_name("orders.fifo"),
                                              {{"FifoQueue", "true"}}, {}));
        ASSERT_TRUE(made) << made.error().message;
    }

    void TearDown() override {
        service->stop();
        be->stop();
        io->stop();
        be->close();
        io.reset();
        service.reset();
        be.reset();
    }

    template <typename T>
    T run(asio::awaitable<T> a) {
        return test::run_on(*io, std::move(a));
    }

    api::sent_message send(const std::string& body, const std::string& dedup_id) {
        api::outgoing_message m;
        m.body = body;
        m.group_id = "g";
        m.deduplication_id = dedup_id;
        std::vector<api::outgoing_message> msgs;
        msgs.push_back(std::move(m));
        auto r = run(service->send_messages(queue_name("orders.fifo"), std::move(msgs)));
        EXPECT_TRUE(r) << r.error().message;
        return r && r->size() == 1 ? r->front() : api::sent_message{};
    }

    /// Every message the queue hands out (received and deleted until a receive comes back
    /// empty).
    std::vector<api::received_message> drain() {
        std::vector<api::received_message> all;
        for (;;) {
            api::receive_request req;
            req.queue = queue_name("orders.fifo");
            req.max_messages = 10;
            req.visibility_timeout = std::chrono::seconds(30);
            req.wait = std::chrono::seconds(1);
            auto r = run(service->receive_messages(std::move(req)));
            EXPECT_TRUE(r) << r.error().message;
            if (!r || r->empty()) {
                return all;
            }
            std::vector<std::string> handles;
            for (auto& m : *r) {
                handles.push_back(m.receipt_handle);
                all.push_back(std::move(m));
            }
            auto d = run(service->delete_messages(queue_name("orders.fifo"), std::move(handles)));
            EXPECT_TRUE(d);
        }
    }
};

TEST_F(QueueDedup, RetryOfASendStoredButAnsweredWithAnErrorIsAnsweredWithTheStoredMessage) {
    ASSERT_FALSE(send("before", "d0").error.code);
    records->answer_failed_after_storing = 1;
    const auto failed = send("once", "d1");
    ASSERT_TRUE(failed.error.code) << "the produce was answered with an error";

    const auto retried = send("once", "d1");
    ASSERT_FALSE(retried.error.code) << retried.error.message;
    ASSERT_FALSE(retried.message_id.empty());

    const auto got = drain();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].body, "before");
    EXPECT_EQ(got[1].body, "once");
    EXPECT_EQ(got[1].message_id, retried.message_id);
    // The id stays deduplicated: a third send is the same message again.
    EXPECT_EQ(send("once", "d1").message_id, retried.message_id);
    EXPECT_TRUE(drain().empty());
}

TEST_F(QueueDedup, RetryOfASendRefusedBeforeStoringIsStored) {
    records->refuse_before_storing = 1;
    ASSERT_TRUE(send("once", "d1").error.code);

    const auto retried = send("once", "d1");
    ASSERT_FALSE(retried.error.code) << retried.error.message;
    const auto got = drain();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].body, "once");
    EXPECT_EQ(got[0].message_id, retried.message_id);
}

TEST_F(QueueDedup, RetryWhileTheTopicCannotBeReadIsRefusedAndDecidedOnceItCan) {
    records->answer_failed_after_storing = 1;
    ASSERT_TRUE(send("once", "d1").error.code);

    records->fail_reads = true;
    const auto blind = send("once", "d1");
    ASSERT_TRUE(blind.error.code) << "nothing may be stored while the earlier send is unknown";
    EXPECT_EQ(api::reason(blind.error.code), api::errc::backend_unavailable);

    records->fail_reads = false;
    const auto retried = send("once", "d1");
    ASSERT_FALSE(retried.error.code) << retried.error.message;
    const auto got = drain();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].message_id, retried.message_id);
}

TEST_F(QueueDedup, AnUnknownSendPastTheWindowIsSentAgain) {
    records->answer_failed_after_storing = 1;
    ASSERT_TRUE(send("once", "d1").error.code);
    clock.advance(queue_settings{}.deduplication_window_ms + 1000);

    const auto again = send("once", "d1");
    ASSERT_FALSE(again.error.code) << again.error.message;
    // Past the window the id deduplicates nothing: both copies are messages.
    EXPECT_EQ(drain().size(), 2u);
}

TEST_F(QueueDedup, AReceiveWhoseStateWasNotStoredLeavesTheGroupFreeAtOnce) {
    ASSERT_FALSE(send("first", "d1").error.code);
    ASSERT_FALSE(send("second", "d2").error.code);
    api::receive_request req;
    req.queue = queue_name("orders.fifo");
    req.max_messages = 10;
    req.visibility_timeout = std::chrono::seconds(120);
    req.wait = std::chrono::seconds(1);

    log.fail_flushes = true;
    auto failed = run(service->receive_messages(req));
    ASSERT_FALSE(failed) << "the receive's state write failed: the receive is an error";
    EXPECT_EQ(api::reason(failed.error().code), api::errc::storage_error);

    // No client got them: they are not held for the 120 s (the group in order, at once).
    log.fail_flushes = false;
    auto again = run(service->receive_messages(req));
    ASSERT_TRUE(again) << again.error().message;
    ASSERT_EQ(again->size(), 2u);
    EXPECT_EQ((*again)[0].body, "first");
    EXPECT_EQ((*again)[1].body, "second");
    EXPECT_EQ((*again)[0].receive_count, 1) << "the failed receive does not count";
}

}  // namespace
}  // namespace sluice::backend::queue
