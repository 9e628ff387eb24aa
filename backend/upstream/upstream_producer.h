// api::producer over a Kafka cluster (owned by backend/upstream): every send() goes through
// the client level's one idempotent librdkafka producer, and answers once every record's
// delivery report arrived or the call's deadline passed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include <librdkafka/rdkafka.h>

#include "backend/api/client.h"
#include "backend/upstream/upstream_common.h"
#include "backend/upstream/upstream_monitor.h"

namespace sluice::backend::upstream {

/// The producer of the upstream client level.
///
///   send() --(caller's executor)--> topic check (cache, else metadata on the pool)
///          --> rd_kafka_produce_batch for the whole call when its records are all for one
///              partition and carry no headers or timestamps of their own (REST v2), else
///              rd_kafka_produceva per record (opaque: each record's slot of the call)
///          --> co_await the call's timer (its deadline)
///   poller thread: rd_kafka_poll -> on_delivery -> the slot's result; the last one posts a
///          cancel of the timer to the caller's executor, which resumes the call.
///
/// Partitioning: an explicit partition is used as is; keyed records go to librdkafka's
/// `murmur2_random` partitioner (Kafka's Java producer's murmur2 for keyed records); records
/// without either go, all of one call, to one partition chosen round-robin across calls.
/// acks: the handle is idempotent with acks=all, which serves every call: acks=leader calls
/// get the stronger guarantee; acks=none calls are answered once their records are queued
/// (partition as asked or -1, offset -1) and their reports are ignored.
/// Deadline: librdkafka's message.timeout.ms is per handle, so a call whose records are not
/// acknowledged by its own deadline answers them request_timed_out and ignores their late
/// reports (the records may still be stored: request_timed_out says so). The handle's own
/// message.timeout.ms defaults to the client's request timeout: a call with a longer deadline
/// sees its records fail at that bound (also request_timed_out).
/// QUEUE_FULL: the record waits (5 ms steps, up to the deadline) and is retried, never dropped.
/// Cost: against the mock cluster (linger.ms=0) a one-record send() took 37 us a call, a bare
/// librdkafka producer polled by the sending thread 25 us a record: the poller thread and the
/// post back to the caller's executor cost about 12 us a call (a 100-record send: 123 us).
/// One produce_batch instead of 100 produceva calls: on a quiet machine REST v2 through a
/// gateway went 1.15x faster at 31 % less gateway CPU per record (docs/benchmarks.md, session
/// 41). The caller is woken once per call, by the last report.
///
/// Lifecycle: made by the client over its producer handle `rk`, which outlives it; the client
/// stops the poller (which delivers every outstanding report, purged at shutdown) first.
/// Concurrency: thread-safe; send() resumes on the caller's executor, which must not run
/// handlers concurrently (an io_context run by one thread, or a strand).
class upstream_producer final : public api::producer {
  public:
    upstream_producer(rd_kafka_t* rk, blocking_pool& pool, upstream_monitor& monitor,
                      std::chrono::milliseconds request_timeout,
                      std::chrono::milliseconds metadata_max_age);

    api::awaitable<api::backend_result<std::vector<api::delivery>>> send(
        topic_name topic, std::vector<api::outgoing_record> records,
        api::send_options opts) override;
    api::awaitable<api::backend_result<std::int32_t>> partitions(topic_name topic) override;

    /// Drops what the cache knows of `topic` (admin calls after creating, deleting or growing
    /// it; a delivery report saying the topic or partition is unknown).
    void forget(const std::string& topic);

    /// librdkafka's dr_msg_cb of the producer handle (the poller thread).
    static void on_delivery(rd_kafka_t* rk, const rd_kafka_message_t* msg, void* opaque);

  private:
    /// The partition count from the cache, else from the cluster (refresh forced with
    /// `refresh`); at most `timeout` waiting.
    api::awaitable<api::backend_result<std::int32_t>> partition_count(
        const topic_name& topic, bool refresh, std::chrono::milliseconds timeout);

    struct cached_topic {
        std::int32_t partitions = 0;
        std::chrono::steady_clock::time_point fetched;
    };

    rd_kafka_t* rk_;
    blocking_pool& pool_;
    upstream_monitor& monitor_;
    std::chrono::milliseconds request_timeout_;
    std::chrono::milliseconds metadata_max_age_;
    std::atomic<std::uint32_t> round_robin_{0};
    std::mutex cache_mu_;
    std::unordered_map<std::string, cached_topic> cache_;
};

}  // namespace sluice::backend::upstream
