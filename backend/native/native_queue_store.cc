#include "backend/native/native_queue_store.h"

#include <algorithm>

#include "backend/api/errc.h"
#include "backend/logger.h"
#include "backend/native/clock.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch_builder.h"

namespace sluice::backend::native {
namespace kafka = protocol::kafka;

namespace {

/// Decompressed size allowed per batch at replay (our batches are never compressed).
constexpr std::size_t max_replay_batch_bytes = 64 << 20;

/// A state record's bytes besides its key and value: length, attributes, timestamp and offset
/// deltas, key and value lengths, header count (all varints; small for the service's records).
constexpr std::size_t record_overhead_bytes = 24;

}  // namespace

native_queue_store::native_queue_store(log::log_manager& log, std::int64_t segment_bytes)
    : log_(log), segment_bytes_(segment_bytes) {}

std::shared_ptr<log::partition_log> native_queue_store::partition(bool create) {
    std::lock_guard lock(mu_);
    if (part_ && !part_->closed()) {
        return part_;
    }
    if (!log_.find_topic(queue::state_topic_name)) {
        if (!create) {
            return nullptr;
        }
        auto made = log_.create_internal_topic(
            queue::state_topic_name, 1,
            {{"cleanup.policy", "compact"}, {"segment.bytes", std::to_string(segment_bytes_)}});
        if (!made) {
            queue_log().error("cannot create {}: {}", queue::state_topic_name,
                              made.error().message());
            return nullptr;
        }
        queue_log().info("created internal topic {}", queue::state_topic_name);
    }
    part_ = log_.partition(queue::state_topic_name, partition_id(0));
    return part_;
}

result<queue::state_log::position> native_queue_store::append(
    std::span<const queue::encoded_record> records) {
    auto part = partition(true);
    if (!part) {
        return fail(api::errc::storage_error);
    }
    const std::int64_t now = wall_clock_ms();
    kafka::record_batch_builder builder;
    // Keys, values and each record's few bytes of lengths and deltas: one buffer, no regrowth.
    std::size_t bytes = 0;
    for (const auto& r : records) {
        bytes += r.key.size() + (r.value ? r.value->size() : 0) + record_overhead_bytes;
    }
    builder.reserve(bytes);
    for (const auto& r : records) {
        std::optional<protocol::bytes_view> value;
        if (r.value) {
            value = protocol::bytes_view(r.value->data(), r.value->size());
        }
        builder.add(protocol::bytes_view(r.key.data(), r.key.size()), value, now);
    }
    auto batch = builder.finish();
    if (!batch) {
        return fail(api::errc::message_too_large);
    }
    log::append_options opts;
    opts.now_ms = now;
    auto appended = part->append(batch->mutable_view(), opts);
    if (!appended) {
        return fail(appended.error());
    }
    return position{appended->last_offset.value + 1};
}

boost::asio::awaitable<result<void>> native_queue_store::flush(position p) {
    auto part = partition(false);
    if (!part) {
        co_return result<void>{};
    }
    // A position past the end (the service's "everything so far") means the log end.
    const offset end = std::min(offset(p.end), part->log_end_offset());
    co_return co_await part->flush_to(end);
}

result<void> native_queue_store::replay(
    const std::function<void(protocol::bytes_view, std::optional<protocol::bytes_view>)>& fn) {
    auto part = partition(false);
    if (!part) {
        return {};  // nothing stored yet
    }
    auto done = part->replay(part->log_start_offset(), [&](protocol::bytes_view batch) {
        auto decoded = kafka::decode_batch(batch, max_replay_batch_bytes);
        if (!decoded) {
            queue_log().warn("{}: skipping an undecodable batch: {}", queue::state_topic_name,
                             decoded.error().message());
            return true;
        }
        if (decoded->header.is_control()) {
            return true;
        }
        for (const auto& rec : decoded->records) {
            if (rec.key) {
                fn(*rec.key, rec.value);
            }
        }
        return true;
    });
    if (!done) {
        return fail(done.error());
    }
    return {};
}

}  // namespace sluice::backend::native
