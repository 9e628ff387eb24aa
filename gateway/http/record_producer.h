// Producing records that arrive as JSON (REST v2 and v3, WebSocket): choosing each record's
// partition as Kafka's Java producer would, building one v2 record batch per partition, one
// call to api::records::produce, and each record's offset in the answer (owned by
// gateway/http). Stateless apart from the round-robin counter for records without a key.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "backend/api/records.h"
#include "backend/api/topics.h"
#include "gateway/http/outgoing_record.h"
#include "protocol/core/ids.h"

namespace sluice::gateway {

/// One record's outcome, in the order of the request.
struct produced_record {
    std::error_code error;  // empty on success
    std::int32_t partition = -1;
    std::int64_t offset = -1;
    std::int64_t timestamp = -1;  // the record's time (LogAppendTime when the topic uses it)
};

/// Why a whole produce call failed before anything was sent.
enum class produce_refusal {
    none,
    unknown_topic,      // the topic does not exist
    unknown_partition,  // a record names a partition the topic does not have
};

struct produce_outcome {
    produce_refusal refusal = produce_refusal::none;
    std::int32_t bad_partition = -1;  // unknown_partition: the one named
    std::vector<produced_record> records;
};

/// Kafka's default partitioner for keyed records (murmur2 of the key bytes, made positive,
/// modulo the partition count): a REST record and a Java producer's record with the same key
/// land in the same partition.
std::int32_t partition_for_key(std::string_view key, std::int32_t partitions);

/// Produces to one topic. Shared by every HTTP-side producer; thread-safe.
class record_producer {
public:
    record_producer(backend::api::topics& topics, backend::api::records& records,
                    backend::api::acks acks)
        : topics_(topics), records_(records), acks_(acks) {}

    /// Records without a partition and key go, all of one call, to one partition chosen
    /// round-robin across calls (Kafka's sticky partitioning, per request).
    boost::asio::awaitable<produce_outcome> produce(topic_name topic,
                                                    std::vector<outgoing_record> records);

    backend::api::acks acks() const { return acks_; }

private:
    backend::api::topics& topics_;
    backend::api::records& records_;
    backend::api::acks acks_;
    std::atomic<std::uint32_t> next_partition_{0};
};

/// Milliseconds since the Unix epoch.
std::int64_t now_ms();

}  // namespace sluice::gateway
