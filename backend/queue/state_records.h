// The records the queue service keeps its state in (owned by backend/queue): one internal
// compacted topic, `__queue_state`, of keyed records, so that compaction keeps the latest value
// of each key and a tombstone (null value) removes one. Nothing in it is specific to the
// native log: any Kafka cluster's compacted topic can hold it.
//
// Every integer is big-endian; "string" is an int32 length and UTF-8 bytes (-1: null where
// nullable); "uuid" is 16 raw bytes.
//
//   key   int16 key_type, then
//     0 queue           string name
//     1 cursor          uuid queue_id, int32 partition
//     2 message         uuid queue_id, int32 partition, int64 offset
//     3 secret          (nothing)
//     4 deleted queue   string name
//     5 move task       string task_handle
//     6 receive lease   uuid queue_id, int32 partition
//
//   values (each starts with int16 version = 0)
//     queue          uuid queue_id, uuid topic_id, int8 flags (1: the queue created its topic),
//                    int64 created_ms, int64 modified_ms, int64 last_purge_ms,
//                    int32 n, n x (string name, string value)   attributes as set
//                    int32 n, n x (string key, string value)    tags
//     cursor         int64 offset: every message of the partition below it is done
//     message        int8 phase (0 received, 1 deleted), int32 receive_count,
//                    int64 visible_at_ms (when a received message is visible again),
//                    int64 first_receive_ms
//     secret         string key (the receipt-handle MAC key)
//     deleted queue  int64 deleted_ms
//     move task      string source queue, uuid source queue_id, nullable string
//                    destination_arn, int32 max_per_second (-1: none), string status,
//                    int64 moved, int64 to_move, nullable string failure_reason,
//                    int64 started_ms, int32 n, n x int64 end offset per source partition
//     receive lease  int64 below, int64 until_ms: receives of the partition's messages below
//                    `below` may have been answered before their message records were stored,
//                    each with a visibility timeout ending by `until_ms` (queue_state.h)
//
// How the state follows from the records: the latest value of each key, as compaction keeps
// it. A queue id names one incarnation of a queue (a re-created queue gets a new one), so its
// cursors and messages never mix with an older incarnation's; a message key at or above its
// partition's cursor says what happened to that message, one below it means nothing (the
// service writes tombstones for those as the cursor passes them).
// Crash behaviour: records are written in batches, one per state change, that the log keeps
// or drops whole; the state after a crash is that of a prefix of the changes, and every change
// that was answered (flushed) is in it. A record of an unknown key type or version is skipped
// at replay with a warning, never trusted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backend/api/queues.h"
#include "protocol/core/bytes.h"
#include "protocol/core/result.h"
#include "protocol/core/uuid.h"

namespace sluice::backend::queue {

/// The name of the internal topic that holds every queue's state.
inline constexpr const char* state_topic_name = "__queue_state";

struct queue_record {
    std::string name;
    uuid queue_id;
    uuid topic_id;
    bool owns_topic = false;
    std::int64_t created_ms = 0;
    std::int64_t modified_ms = 0;
    std::int64_t last_purge_ms = 0;
    api::attribute_map attributes;
    api::attribute_map tags;
    bool operator==(const queue_record&) const = default;
};

struct cursor_record {
    uuid queue_id;
    std::int32_t partition = 0;
    std::int64_t cursor = 0;
    bool operator==(const cursor_record&) const = default;
};

enum class stored_phase : std::int8_t { received = 0, deleted = 1 };

struct message_record {
    uuid queue_id;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    stored_phase phase = stored_phase::received;
    std::int32_t receive_count = 0;
    std::int64_t visible_at_ms = 0;
    std::int64_t first_receive_ms = 0;
    bool operator==(const message_record&) const = default;
};

struct secret_record {
    std::string key;
    bool operator==(const secret_record&) const = default;
};

struct deleted_queue_record {
    std::string name;
    std::int64_t deleted_ms = 0;
    bool operator==(const deleted_queue_record&) const = default;
};

struct task_record {
    std::string handle;
    std::string source;
    uuid source_queue_id;
    std::optional<std::string> destination_arn;
    std::int32_t max_per_second = -1;
    std::string status;
    std::int64_t moved = 0;
    std::int64_t to_move = 0;
    std::optional<std::string> failure_reason;
    std::int64_t started_ms = 0;
    std::vector<std::int64_t> end_offsets;
    bool operator==(const task_record&) const = default;
};

struct lease_record {
    uuid queue_id;
    std::int32_t partition = 0;
    std::int64_t below = 0;
    std::int64_t until_ms = 0;
    bool operator==(const lease_record&) const = default;
};

/// The key of a record whose value is gone (a tombstone), by key type.
struct queue_key { std::string name; bool operator==(const queue_key&) const = default; };
struct cursor_key { uuid queue_id; std::int32_t partition = 0; bool operator==(const cursor_key&) const = default; };
struct message_key { uuid queue_id; std::int32_t partition = 0; std::int64_t offset = 0; bool operator==(const message_key&) const = default; };
struct deleted_queue_key { std::string name; bool operator==(const deleted_queue_key&) const = default; };
struct task_key { std::string handle; bool operator==(const task_key&) const = default; };
struct lease_key { uuid queue_id; std::int32_t partition = 0; bool operator==(const lease_key&) const = default; };

/// One record as written or replayed: a value, or the tombstone of a key.
using state_entry = std::variant<queue_record, cursor_record, message_record, secret_record,
                                 deleted_queue_record, task_record, queue_key, cursor_key,
                                 message_key, deleted_queue_key, task_key, lease_record,
                                 lease_key>;

/// A record's bytes.
struct encoded_record {
    std::vector<std::byte> key;
    std::optional<std::vector<std::byte>> value;  // nullopt: a tombstone
};

encoded_record encode(const state_entry& entry);
/// The records every receive and delete writes, encoded without the variant (same bytes).
encoded_record encode(const cursor_record& c);
encoded_record encode(const message_record& m);
encoded_record encode(const cursor_key& c);
encoded_record encode(const message_key& m);

/// Whether a record's key is a queue's or a deleted queue's (what a gateway following the
/// queues without owning them reads), from its key type alone: the other records need not be
/// decoded.
bool names_a_queue(protocol::bytes_view key);

/// Decodes one replayed record. Errors: protocol errc (truncated, invalid_value) for bytes
/// that do not decode, unsupported_version for an unknown key type or value version.
result<state_entry> decode(protocol::bytes_view key, std::optional<protocol::bytes_view> value);

}  // namespace sluice::backend::queue
