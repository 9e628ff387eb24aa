// The queue service's state log in a compacted topic of a Kafka cluster (owned by
// backend/queue): what the queues of upstream mode keep their state in (the native backend
// keeps it in its own __queue_state, backend/native/native_queue_store.h). Written through
// api::producer, replayed through api::consumer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "backend/api/client.h"
#include "backend/queue/state_log.h"
#include "backend/queue/wakeup.h"

namespace sluice::backend::queue {

struct topic_state_log_options {
    /// The compacted topic, created when missing.
    std::string topic = "_sluice_queue_state";
    /// The partition of the topic this log writes and replays (a fleet's unit of ownership:
    /// sqs_fleet). The topic must have it: open() fails otherwise.
    std::int32_t partition = 0;
    /// How many partitions the topic gets when this log creates it (at least partition + 1);
    /// an existing topic keeps its count (partition_count() reads it).
    std::int32_t partitions_when_created = 1;
    /// How long open() and replay() keep trying while the cluster cannot be reached.
    std::chrono::milliseconds start_deadline{60000};
    /// flush() fails with request_timed_out when the records are not stored by then (the
    /// writer keeps trying: nothing is dropped, and later records stay behind them).
    std::chrono::milliseconds flush_timeout{30000};
    /// When set, the state is written through this transactional producer, each batch of the
    /// writer one transaction (the records of every call queued meanwhile), and replayed
    /// read_committed: a newer producer of its transactional.id (a new owner of the queues)
    /// fences this log, whose later writes the cluster refuses. Must outlive the log.
    api::transactional_producer* txn = nullptr;
    /// Called once (on the writer's thread) when the cluster refused a write as fenced: every
    /// flush from then on fails with producer_fenced.
    std::function<void()> on_fenced;
};

/// state_log over a compacted topic of the cluster.
///
/// append() queues the records (never suspends); one writer coroutine sends everything queued
/// in one producer call at a time, in append order (the producer is idempotent: one partition
/// keeps the order), retrying a failed call whole (a record written twice is the same keyed
/// state), and flush() waits until the writer has stored a position. With a transactional
/// producer (options.txn) each send is one committed transaction, and a fenced producer ends
/// the writer: flushes fail with producer_fenced, nothing more is written. replay() reads the
/// partition from its start to the end offset found when it starts. Every record goes to, and
/// is read from, options.partition alone.
/// Lifecycle: construct (starts the writer's io thread), open() (creates the topic when
/// missing; throws std::runtime_error when the cluster cannot be reached by the deadline),
/// replay(), appends; the destructor sends what is queued (bounded by flush_timeout) and
/// stops the thread.
/// Concurrency: thread-safe; flush() resumes on the caller's executor, which must not run
/// handlers concurrently.
class topic_state_log final : public state_log {
public:
    topic_state_log(api::client& client, topic_state_log_options opts = {});
    ~topic_state_log() override;
    topic_state_log(const topic_state_log&) = delete;
    topic_state_log& operator=(const topic_state_log&) = delete;

    void open();
    /// The topic's partition count as open() found it on the cluster (0 before open()).
    std::int32_t partition_count() const { return partition_count_.load(); }

    result<position> append(std::span<const encoded_record> records) override;
    boost::asio::awaitable<result<void>> flush(position p) override;
    result<void> replay(
        const std::function<void(protocol::bytes_view, std::optional<protocol::bytes_view>)>& fn)
        override;

private:
    boost::asio::awaitable<void> write_loop();
    boost::asio::awaitable<api::backend_error> send_batch(
        const topic_name& name, const std::vector<api::outgoing_record>& batch);
    boost::asio::awaitable<void> ensure_topic();
    boost::asio::awaitable<result<void>> read_all(
        const std::function<void(protocol::bytes_view, std::optional<protocol::bytes_view>)>& fn);
    template <typename T>
    T run_on_thread(boost::asio::awaitable<T> a);

    api::client& client_;
    topic_state_log_options opts_;
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;

    std::mutex mu_;
    std::vector<api::outgoing_record> pending_;
    std::int64_t appended_ = 0;  // records appended so far (positions count them)
    std::int64_t stored_ = 0;    // records the cluster acknowledged
    bool stopping_ = false;
    bool writer_done_ = false;
    bool fenced_ = false;
    std::atomic<std::int32_t> partition_count_{0};
    std::shared_ptr<wakeup> writer_parked_;
    wakeup_list flushes_;

    std::thread thread_;
};

}  // namespace sluice::backend::queue
