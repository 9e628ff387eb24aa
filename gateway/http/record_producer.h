// Producing records that arrive as JSON (REST v2 and v3, WebSocket) through the client level's
// producer (api::producer: Kafka's partitioner, one record batch per partition, one produce
// call), with each record's offset in the answer (owned by gateway/http). Stateless. A produce
// to a missing topic creates it (through api::admin) when auto.create.topics.enable is on, as
// a Kafka producer's first Metadata does (the CREATE rule of gateway/policy/chain.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "backend/api/client.h"
#include "backend/api/records.h"
#include "gateway/http/outgoing_record.h"
#include "gateway/policy/chain.h"
#include "gateway/policy/front_acls.h"
#include "gateway/policy/topic_auto_create.h"
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
    unknown_topic,      // the topic does not exist (and auto-creation is off)
    unknown_partition,  // a record names a partition the topic does not have
    create_denied,      // the topic does not exist and the producer may not CREATE it
    create_failed,      // creating the missing topic failed (create_error says why)
};

struct produce_outcome {
    produce_refusal refusal = produce_refusal::none;
    std::int32_t bad_partition = -1;  // unknown_partition: the one named
    std::int32_t partitions = -1;     // ensure_topic: the topic's partition count when found
    std::optional<acl_check> denied;  // create_denied: the check that failed
    std::error_code create_error;     // create_failed
    std::vector<produced_record> records;
};

/// Who produces (for auto-creating a missing topic: Kafka's CREATE rule applies to them,
/// asked quietly of the chain; the caller reports a denial with its own action).
struct producer_identity {
    policy_chain chain;
    requester who;  // views: the caller keeps what they name alive
};

/// Produces to one topic. Shared by every HTTP-side producer; thread-safe.
class record_producer {
public:
    /// `creation`: auto.create.topics.enable and num.partitions, as the Kafka front's Metadata
    /// applies them.
    record_producer(backend::api::client& client, backend::api::acks acks,
                    topic_auto_creation creation = {})
        : client_(client), acks_(acks), creation_(creation) {}

    /// Records without a partition and key go, all of one call, to one partition chosen
    /// round-robin across calls (Kafka's sticky partitioning, per request). A missing topic is
    /// created first when auto-creation is on and `who` may CREATE it (topic_auto_create.h);
    /// without `who` a missing topic is unknown_topic.
    boost::asio::awaitable<produce_outcome> produce(topic_name topic,
                                                    std::vector<outgoing_record> records,
                                                    const producer_identity* who = nullptr);
    /// Only what produce() does before it appends: the topic, created if it is missing and
    /// may be. For callers that answer a missing topic before reading their records (REST v3).
    /// The outcome's refusal is none, unknown_topic, create_denied or create_failed; with none,
    /// `partitions` is the topic's partition count (partitions are only ever added).
    boost::asio::awaitable<produce_outcome> ensure_topic(topic_name topic,
                                                         const producer_identity* who);

    backend::api::acks acks() const { return acks_; }

private:
    /// The topic's partition count, after creating it when it is missing and may be;
    /// nullopt with `out.refusal` set otherwise.
    boost::asio::awaitable<std::optional<std::int32_t>> find_or_create(
        const topic_name& topic, const producer_identity* who, produce_outcome& out);

    backend::api::client& client_;
    backend::api::acks acks_;
    topic_auto_creation creation_;
};

/// Milliseconds since the Unix epoch.
std::int64_t now_ms();

}  // namespace sluice::gateway
