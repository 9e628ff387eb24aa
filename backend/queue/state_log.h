// Where the queue service writes its state records (owned by backend/queue): an ordered,
// durable log of keyed records that is replayed at start. The native backend keeps it in the
// internal compacted topic __queue_state of its own log (backend/native/native_queue_store.h);
// a backend over a Kafka cluster can keep it in a compacted topic there.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>

#include <boost/asio/awaitable.hpp>

#include "backend/queue/state_records.h"
#include "protocol/core/bytes.h"
#include "protocol/core/result.h"

namespace sluice::backend::queue {

/// The queue service's state log.
///
/// append() never suspends, so that the service can call it under the lock that orders its
/// state changes: records reach the log in the order the changes were made. Each call's
/// records are one batch, kept or lost whole by a crash. flush() completes once everything up
/// to a position is durable (the native log: fsynced under flush policy `always`).
/// Concurrency: thread-safe; flush() resumes on the caller's executor.
class state_log {
public:
    /// How far the log has been written: what flush() waits for.
    struct position {
        std::int64_t end = 0;
    };

    virtual ~state_log() = default;

    /// Appends `records` as one batch. Errors: storage_error (api::errc), message_too_large.
    virtual result<position> append(std::span<const encoded_record> records) = 0;
    virtual boost::asio::awaitable<result<void>> flush(position p) = 0;
    /// Calls fn with every record in log order (at start, before any append).
    virtual result<void> replay(
        const std::function<void(protocol::bytes_view key, std::optional<protocol::bytes_view> value)>&
            fn) = 0;
};

}  // namespace sluice::backend::queue
