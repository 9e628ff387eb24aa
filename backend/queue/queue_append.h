// Appending messages to a queue's topic (owned by backend/queue): SendMessage, dead-letter
// moves and message move tasks all build record batches (message_codec.h) and produce them
// with acks=all through api::records (the native backend), or send the same records through
// api::producer (a Kafka cluster).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/api/client.h"
#include "backend/api/records.h"
#include "backend/queue/message_codec.h"

namespace sluice::backend::queue {

/// One message to append; the pointers stay valid until append_messages completes.
struct append_item {
    const std::string* body = nullptr;
    const std::vector<api::message_attribute>* attributes = nullptr;
    record_fields fields;
    std::int32_t partition = 0;
};

/// The partition of a message: a message group stays in one partition (Kafka's default
/// partitioner on the group id, so that Kafka producers keying records by group agree);
/// messages without a group go round robin.
std::int32_t partition_for(const std::optional<std::string>& group_id, std::int32_t partitions,
                           std::uint32_t& round_robin);

/// Kafka's murmur2 (as its default partitioner hashes keys), made positive.
std::uint32_t kafka_murmur2(std::string_view key);

/// Appends the items to `topic` in order (one produce request; the batches of a partition in
/// item order, split below `max_batch_bytes`) and waits until they are durable. One answer per
/// item: its offset, or the error of its partition. With a `producer` the records go through
/// it instead (one send, acks=all), each answered with its own offset.
api::awaitable<std::vector<result<std::int64_t>>> append_messages(
    api::records& records, api::producer* producer, std::string topic,
    const std::vector<append_item>& items, std::size_t max_batch_bytes = 1000000);

/// Sends the items to `topic` through `producer` (one send, acks=all), each answered with its
/// own offset or error: append_messages with a producer.
api::awaitable<std::vector<result<std::int64_t>>> send_messages_through(
    api::producer& producer, std::string topic, const std::vector<append_item>& items);

}  // namespace sluice::backend::queue
