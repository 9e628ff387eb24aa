// api::producer over a Kafka cluster (owned by backend/upstream): every send() goes through
// one of the client level's idempotent librdkafka producers (upstream.producer.instances),
// and answers once every record's delivery report arrived or the call's deadline passed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <librdkafka/rdkafka.h>

#include "backend/api/client.h"
#include "backend/upstream/upstream_common.h"
#include "backend/upstream/upstream_monitor.h"

namespace sluice::backend::upstream {

/// The producer of the upstream client level.
///
///   send() --(caller's executor)--> topic check (cache, else metadata on the pool)
///          --> a producer handle: the one with the fewest records awaiting reports
///          --> rd_kafka_produceva per record (opaque: the call's slot)
///          --> co_await the call's timer (its deadline)
///   poller thread: rd_kafka_poll -> on_delivery -> the slot's result; the last one posts a
///          cancel of the timer to the caller's executor, which resumes the call.
///
/// Several handles: each is an idempotent producer of its own (its own producer id and its own
/// five requests in flight per partition, librdkafka 2.0.2's idempotence limit), so N handles
/// keep up to 5 N produce requests per partition in flight. All records of one call go through
/// one handle, so a call's records keep their order; calls made one after another (each
/// awaited) are ordered too, concurrent calls are not (as with one handle).
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
///
/// Lifecycle: made by the client over its producer handles `handles` (at least one; the first
/// also answers the metadata requests), which outlive it; the client stops the pollers (which
/// deliver every outstanding report, purged at shutdown) first.
/// Concurrency: thread-safe; send() resumes on the caller's executor, which must not run
/// handlers concurrently (an io_context run by one thread, or a strand).
class upstream_producer final : public api::producer {
  public:
    upstream_producer(std::vector<rd_kafka_t*> handles, blocking_pool& pool,
                      upstream_monitor& monitor,
                      std::chrono::milliseconds request_timeout,
                      std::chrono::milliseconds metadata_max_age);

    api::awaitable<api::backend_result<std::vector<api::delivery>>> send(
        topic_name topic, std::vector<api::outgoing_record> records,
        api::send_options opts) override;
    api::awaitable<api::backend_result<std::int32_t>> partitions(topic_name topic) override;

    /// Drops what the cache knows of `topic` (admin calls after creating, deleting or growing
    /// it; a delivery report saying the topic or partition is unknown).
    void forget(const std::string& topic);

    /// librdkafka's dr_msg_cb of the producer handles (their poller threads).
    static void on_delivery(rd_kafka_t* rk, const rd_kafka_message_t* msg, void* opaque);

    /// One producer handle and how many records it holds whose reports have not arrived.
    struct instance {
        rd_kafka_t* rk = nullptr;
        std::atomic<std::int64_t> awaiting{0};
    };

  private:
    /// The partition count from the cache, else from the cluster (refresh forced with
    /// `refresh`); at most `timeout` waiting.
    api::awaitable<api::backend_result<std::int32_t>> partition_count(
        const topic_name& topic, bool refresh, std::chrono::milliseconds timeout);

    /// The handle for the next call: the fewest records awaiting reports, ties taken in turn.
    instance& pick();

    struct cached_topic {
        std::int32_t partitions = 0;
        std::chrono::steady_clock::time_point fetched;
    };

    std::vector<std::unique_ptr<instance>> instances_;
    blocking_pool& pool_;
    upstream_monitor& monitor_;
    std::chrono::milliseconds request_timeout_;
    std::chrono::milliseconds metadata_max_age_;
    std::atomic<std::uint32_t> round_robin_{0};  // the partition of records without key
    std::atomic<std::uint32_t> next_instance_{0};
    std::mutex cache_mu_;
    std::unordered_map<std::string, cached_topic> cache_;
};

}  // namespace sluice::backend::upstream
