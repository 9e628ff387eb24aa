// The checks of a message being sent to a queue (owned by backend/queue): what SendMessage and
// SendMessageBatch refuse before anything is produced, and what a message is sent with (its
// delay's end, its trace header, its FIFO deduplication key). Used by the queue service and by
// direct sends (direct_send.h), so that a gateway that does not own a queue answers the same.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backend/api/queues.h"
#include "backend/queue/queue_config.h"

namespace sluice::backend::queue {

/// The checks of one message against its queue, and what it is sent with.
struct prepared {
    api::backend_error error;
    std::int64_t visible_from_ms = 0;
    std::optional<std::string> trace;
    std::string dedup_key;  // FIFO
};

/// Checks `m` against the queue's config `c` at wall time `now` (ms). A FIFO message without a
/// MessageDeduplicationId on a content-deduplicated queue gets the body's SHA-256 as its id.
prepared prepare(const queue_config& c, api::outgoing_message& m, std::int64_t now);

/// What a sent message whose record the topic did not store answers: the topic's size limit
/// (max.message.bytes) as the client's error, anything else as a storage error naming `e`.
api::backend_error not_stored(const api::backend_error& e);

}  // namespace sluice::backend::queue
