// The queue service's state log in the native log (owned by backend/native): the internal
// compacted topic __queue_state, one partition, created on first use. Appends go straight to
// the partition (no suspension: the queue service calls append() under a queue's mutex);
// flush() waits for the group-commit fsync.
#pragma once

#include <memory>
#include <mutex>

#include "backend/log/log_manager.h"
#include "backend/queue/state_log.h"

namespace sluice::backend::native {

class native_queue_store final : public queue::state_log {
public:
    /// `segment_bytes`: the internal topic's segment.bytes (compaction works on sealed ones).
    native_queue_store(log::log_manager& log, std::int64_t segment_bytes);

    result<position> append(std::span<const queue::encoded_record> records) override;
    boost::asio::awaitable<result<void>> flush(position p) override;
    result<void> replay(
        const std::function<void(protocol::bytes_view, std::optional<protocol::bytes_view>)>& fn)
        override;

private:
    std::shared_ptr<log::partition_log> partition(bool create);

    log::log_manager& log_;
    std::int64_t segment_bytes_;
    std::mutex mu_;
    std::shared_ptr<log::partition_log> part_;
};

}  // namespace sluice::backend::native
