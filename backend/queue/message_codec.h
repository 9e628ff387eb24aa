// SQS messages as records of the queue's topic (owned by backend/queue), so that Kafka readers
// of the topic see every message and Kafka writers feed the queue:
//
//   key        the message group id (FIFO queues, fair queues), else null
//   value      the body
//   timestamp  when it was sent (create time), the origin of retention and SentTimestamp
//   headers    one per message attribute, named as the attribute, its value as bytes (UTF-8
//              for String and Number); and, named with a ':' (which no attribute name has):
//                sqs:type:<name>   the data type of an attribute that is not plain String
//                sqs:visible-at    decimal ms since the epoch: the end of the message's delay
//                sqs:dedup         the FIFO deduplication id
//                sqs:trace         the AWSTraceHeader system attribute
//                sqs:dlq-source    the ARN of the queue a dead-letter move took it from
//
// A record written by a Kafka or REST producer is a message too: its headers with legal
// attribute names become attributes (String when the value is text SQS can carry, else Binary),
// others are left out; it is visible at once.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/api/queues.h"
#include "backend/api/records.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch_builder.h"

namespace sluice::backend::queue {

/// A message as the queue holds it in memory (decoded from its record).
struct stored_message {
    std::string body;
    std::vector<api::message_attribute> attributes;
    std::optional<std::string> group_id;
    std::optional<std::string> deduplication_id;
    std::optional<std::string> trace_header;
    std::optional<std::string> dead_letter_source_arn;
    std::int64_t sent_ms = 0;
    std::int64_t visible_from_ms = 0;  // 0: no delay

    /// Roughly what holding it costs (for the read-ahead budget).
    std::size_t memory_bytes() const;
};

/// The system fields of a message being appended.
struct record_fields {
    std::int64_t timestamp_ms = 0;
    std::int64_t visible_from_ms = 0;
    const std::optional<std::string>* group_id = nullptr;
    const std::optional<std::string>* deduplication_id = nullptr;
    const std::optional<std::string>* trace_header = nullptr;
    const std::optional<std::string>* dead_letter_source_arn = nullptr;
};

/// Adds one message's record to `builder` (which copies what it needs before returning).
void add_message_record(protocol::kafka::record_batch_builder& builder, const std::string& body,
                        const std::vector<api::message_attribute>& attributes,
                        const record_fields& fields);

/// The message a record holds.
stored_message decode_message(const protocol::kafka::record_view& record);

/// The messages in `bytes` (whole batches of one partition as fetched, read_committed), in
/// offset order: control batches and the records of aborted transactions are left out, and
/// so is a batch that does not decode (logged by the caller through `bad`). Returns the offset
/// after the last complete batch (where the next fetch starts), or -1 when there is none.
std::int64_t decode_fetched(protocol::bytes_view bytes,
                            const std::vector<api::aborted_transaction>& aborted,
                            const std::function<void(std::int64_t offset, stored_message m)>& fn,
                            std::size_t* bad = nullptr);

/// True when `text` is UTF-8 made only of the characters SQS allows in a message
/// (#x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF).
bool valid_message_text(std::string_view text);

/// SQS's rules for an attribute name: 1-256 of [A-Za-z0-9_.-], not starting with "AWS." or
/// "Amazon." (any case), no leading, trailing or repeated period.
bool valid_attribute_name(std::string_view name);

}  // namespace sluice::backend::queue
