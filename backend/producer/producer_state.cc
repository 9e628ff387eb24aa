#include "backend/producer/producer_state.h"

#include <algorithm>
#include <limits>

#include "backend/logger.h"
#include "backend/producer/errc.h"
#include "protocol/core/crc32c.h"

namespace sluice::backend::producer {
namespace kafka = protocol::kafka;

namespace {

constexpr std::uint32_t snapshot_magic = 0x534c5053;  // "SLPS"
constexpr std::uint16_t snapshot_version = 1;
constexpr std::size_t snapshot_header = 4 + 2 + 4;
/// A stored control batch is small; anything larger is not a marker we wrote.
constexpr std::size_t max_marker_batch_bytes = 1 << 16;

/// compat: ProducerAppendInfo.inSequence (wraps at 2^31).
bool in_sequence(std::int32_t last_seq, std::int32_t next_seq) {
    return static_cast<std::int64_t>(next_seq) == static_cast<std::int64_t>(last_seq) + 1 ||
           (next_seq == 0 && last_seq == std::numeric_limits<std::int32_t>::max());
}

void add_batch(producer_entry& e, const kafka::batch_header& h, std::int64_t first_offset) {
    if (e.epoch != h.producer_epoch) {
        e.batches.clear();
        e.epoch = h.producer_epoch;
    }
    if (e.batches.size() == producer_entry::batches_to_retain) {
        e.batches.pop_front();
    }
    e.batches.push_back({h.base_sequence, h.last_sequence(), first_offset,
                         first_offset + h.last_offset_delta, h.max_timestamp});
    e.last_timestamp = h.max_timestamp;
}

}  // namespace

partition_producer_state::partition_producer_state(std::string topic, partition_id partition)
    : topic_(std::move(topic)), partition_(partition) {}

result<std::optional<log::append_result>> partition_producer_state::check_data(
    producer_entry& e, const kafka::batch_header& h, std::int64_t next_offset, bool verified) {
    // A retry of one of the last five batches: answer with where it went (no second append).
    if (h.producer_epoch == e.epoch) {
        for (const auto& b : e.batches) {
            if (b.first_seq == h.base_sequence && b.last_seq == h.last_sequence()) {
                log::append_result dup;
                dup.base_offset = offset(b.first_offset);
                dup.last_offset = offset(b.last_offset);
                return std::optional<log::append_result>(dup);
            }
        }
    }
    // compat: since 2.7 a fenced data batch gets INVALID_PRODUCER_EPOCH (not PRODUCER_FENCED).
    if (h.producer_epoch < e.epoch) {
        return fail(errc::invalid_producer_epoch);
    }
    if (h.producer_epoch != e.epoch) {
        // A new epoch starts at sequence 0, unless the producer is unknown here.
        if (h.base_sequence != 0 && e.epoch != -1) {
            return fail(errc::out_of_order_sequence);
        }
    } else if (!in_sequence(e.last_seq(), h.base_sequence)) {
        return fail(errc::out_of_order_sequence);
    }
    if (e.current_txn_first_offset >= 0 && !h.is_transactional()) {
        return fail(errc::invalid_txn_state);
    }
    if (e.current_txn_first_offset < 0 && h.is_transactional() && !verified) {
        // Transactional data may open a transaction in a partition only after the coordinator
        // confirmed the partition is part of it (Kafka's verification guard).
        return fail(errc::invalid_txn_state);
    }
    add_batch(e, h, next_offset);
    if (h.is_transactional() && e.current_txn_first_offset < 0) {
        e.current_txn_first_offset = next_offset;
    }
    return std::optional<log::append_result>();
}

result<void> partition_producer_state::check_marker(const producer_entry& e, std::int16_t epoch,
                                                    std::int32_t coordinator_epoch) {
    if (epoch < e.epoch) {
        return fail(errc::invalid_producer_epoch);
    }
    if (coordinator_epoch < e.coordinator_epoch) {
        return fail(errc::invalid_producer_epoch);
    }
    return {};
}

void partition_producer_state::apply(const kafka::batch_header& h,
                                     std::optional<kafka::end_txn_marker> marker) {
    std::lock_guard lock(mu_);
    apply_locked(h, marker);
}

void partition_producer_state::apply_locked(const kafka::batch_header& h,
                                            std::optional<kafka::end_txn_marker> marker) {
    end_ = std::max(end_, h.last_offset() + 1);
    ++changes_;
    if (!h.has_producer_id()) {
        return;
    }
    auto& e = producers_[h.producer_id];
    if (h.is_control()) {
        if (!marker) {
            return;  // an empty control batch: its transaction was cleaned away
        }
        if (e.current_txn_first_offset >= 0) {
            ongoing_.erase(e.current_txn_first_offset);
            if (marker->type == kafka::control_record_type::abort) {
                aborted_.push_back({h.producer_id, e.current_txn_first_offset, h.base_offset});
            }
        }
        // compat: ProducerStateEntry.update: a new epoch clears the retained batches.
        if (e.epoch != h.producer_epoch) {
            e.batches.clear();
            e.epoch = h.producer_epoch;
        }
        e.coordinator_epoch = marker->coordinator_epoch;
        e.current_txn_first_offset = -1;
        e.last_timestamp = h.max_timestamp;
        return;
    }
    add_batch(e, h, h.base_offset);
    if (h.is_transactional() && e.current_txn_first_offset < 0) {
        e.current_txn_first_offset = h.base_offset;
        ongoing_[h.base_offset] = h.producer_id;
    }
}

void partition_producer_state::apply_stored(protocol::bytes_view batch) {
    auto h = kafka::read_batch_header(batch);
    if (!h) {
        return;
    }
    std::optional<kafka::end_txn_marker> marker;
    if (h->is_control() && batch.size() <= max_marker_batch_bytes) {
        auto it = kafka::record_iterator::open(batch, max_marker_batch_bytes);
        kafka::record_view r;
        if (it && it->next(r)) {
            if (auto m = kafka::decode_end_txn_marker(r)) {
                marker = *m;
            }
        }
    }
    apply(*h, marker);
}

offset partition_producer_state::last_stable_offset(offset high_watermark) const {
    std::lock_guard lock(mu_);
    if (ongoing_.empty()) {
        return high_watermark;
    }
    return std::min(high_watermark, offset(ongoing_.begin()->first));
}

std::int64_t partition_producer_state::first_ongoing_offset() const {
    std::lock_guard lock(mu_);
    return ongoing_.empty() ? -1 : ongoing_.begin()->first;
}

std::vector<aborted_txn> partition_producer_state::aborted_between(std::int64_t from,
                                                                   std::int64_t upper) const {
    std::lock_guard lock(mu_);
    std::vector<aborted_txn> out;
    auto it = std::lower_bound(aborted_.begin(), aborted_.end(), from,
                               [](const aborted_txn& a, std::int64_t v) {
                                   return a.last_offset < v;
                               });
    for (; it != aborted_.end(); ++it) {
        if (it->first_offset < upper) {
            out.push_back(*it);
        }
    }
    return out;
}

bool partition_producer_state::has_ongoing_txn(std::int64_t pid) const {
    std::lock_guard lock(mu_);
    auto it = producers_.find(pid);
    return it != producers_.end() && it->second.current_txn_first_offset >= 0;
}

std::optional<producer_entry> partition_producer_state::entry(std::int64_t pid) const {
    std::lock_guard lock(mu_);
    auto it = producers_.find(pid);
    if (it == producers_.end()) {
        return std::nullopt;
    }
    return it->second;
}

std::vector<described_producer> partition_producer_state::describe() const {
    std::lock_guard lock(mu_);
    std::vector<described_producer> out;
    out.reserve(producers_.size());
    for (const auto& [pid, e] : producers_) {
        out.push_back({pid, e.epoch, e.last_seq(), e.last_timestamp, e.coordinator_epoch,
                       e.current_txn_first_offset});
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.producer_id < b.producer_id; });
    return out;
}

std::int64_t partition_producer_state::end_offset() const {
    std::lock_guard lock(mu_);
    return end_;
}

void partition_producer_state::forget_removed(const log::partition_log& log) {
    std::size_t from = 0;
    {
        std::lock_guard lock(mu_);
        from = removals_seen_;
    }
    std::vector<log::removed_marker> fresh;
    const std::size_t total = log.removed_markers(from, fresh);
    if (fresh.empty()) {
        return;
    }
    std::lock_guard lock(mu_);
    for (const auto& m : fresh) {
        if (!m.commit) {
            forget_aborted_locked(m.producer_id, m.at.value);
        }
    }
    removals_seen_ = std::max(removals_seen_, total);
}

void partition_producer_state::forget_aborted(std::int64_t pid, std::int64_t marker) {
    std::lock_guard lock(mu_);
    forget_aborted_locked(pid, marker);
}

void partition_producer_state::forget_aborted_locked(std::int64_t pid, std::int64_t marker) {
    auto it = std::find_if(aborted_.begin(), aborted_.end(), [&](const aborted_txn& a) {
        return a.producer_id == pid && a.last_offset == marker;
    });
    if (it != aborted_.end()) {
        aborted_.erase(it);
        ++changes_;
    }
}

std::map<std::int64_t, std::int64_t> partition_producer_state::ongoing() const {
    std::lock_guard lock(mu_);
    return ongoing_;
}

void partition_producer_state::end_lost_txn(std::int64_t pid, std::int64_t first) {
    std::lock_guard lock(mu_);
    auto it = producers_.find(pid);
    if (it == producers_.end() || it->second.current_txn_first_offset != first) {
        return;
    }
    it->second.current_txn_first_offset = -1;
    ongoing_.erase(first);
    ++changes_;
}

std::size_t partition_producer_state::expire(std::int64_t now_ms, std::int64_t expiration_ms,
                                             std::int64_t log_start) {
    std::lock_guard lock(mu_);
    std::size_t removed = 0;
    for (auto it = producers_.begin(); it != producers_.end();) {
        // compat: ProducerStateManager.isProducerExpired.
        if (it->second.current_txn_first_offset < 0 &&
            now_ms - it->second.last_timestamp >= expiration_ms) {
            it = producers_.erase(it);
            ++removed;
        } else {
            ++it;
        }
    }
    while (!aborted_.empty() && aborted_.front().last_offset < log_start) {
        aborted_.pop_front();
        ++removed;
    }
    if (removed > 0) {
        ++changes_;
    }
    return removed;
}

protocol::byte_buffer partition_producer_state::encode_snapshot(std::int64_t& end) const {
    protocol::writer body;
    {
        std::lock_guard lock(mu_);
        end = end_;
        body.i64(end_);
        body.i32(static_cast<std::int32_t>(producers_.size()));
        for (const auto& [pid, e] : producers_) {
            body.i64(pid);
            body.i16(e.epoch);
            body.i32(e.coordinator_epoch);
            body.i64(e.last_timestamp);
            body.i64(e.current_txn_first_offset);
            body.i8(static_cast<std::int8_t>(e.batches.size()));
            for (const auto& b : e.batches) {
                body.i32(b.first_seq);
                body.i32(b.last_seq);
                body.i64(b.first_offset);
                body.i64(b.last_offset);
                body.i64(b.timestamp);
            }
        }
        body.i32(static_cast<std::int32_t>(aborted_.size()));
        for (const auto& a : aborted_) {
            body.i64(a.producer_id);
            body.i64(a.first_offset);
            body.i64(a.last_offset);
        }
    }
    auto payload = body.buffer().view();
    protocol::writer out;
    out.u32(snapshot_magic);
    out.u16(snapshot_version);
    out.u32(protocol::crc32c(payload));
    out.raw(payload);
    return std::move(out.buffer());
}

result<void> partition_producer_state::load_snapshot(protocol::bytes_view bytes) {
    if (bytes.size() < snapshot_header) {
        return fail(errc::storage_error);
    }
    protocol::reader head(bytes.first(snapshot_header));
    if (head.u32() != snapshot_magic || head.u16() != snapshot_version) {
        return fail(errc::storage_error);
    }
    const std::uint32_t crc = head.u32();
    auto payload = bytes.subspan(snapshot_header);
    if (protocol::crc32c(payload) != crc) {
        return fail(errc::storage_error);
    }
    protocol::reader r(payload);
    std::unordered_map<std::int64_t, producer_entry> producers;
    std::map<std::int64_t, std::int64_t> ongoing;
    std::deque<aborted_txn> aborted;
    const std::int64_t end = r.i64();
    const std::int32_t n = r.i32();
    if (!r.ok() || n < 0 || static_cast<std::size_t>(n) > r.remaining() / 31) {
        return fail(errc::storage_error);
    }
    for (std::int32_t i = 0; i < n && r.ok(); ++i) {
        const std::int64_t pid = r.i64();
        producer_entry e;
        e.epoch = r.i16();
        e.coordinator_epoch = r.i32();
        e.last_timestamp = r.i64();
        e.current_txn_first_offset = r.i64();
        const std::int8_t nb = r.i8();
        if (nb < 0 || nb > static_cast<std::int8_t>(producer_entry::batches_to_retain)) {
            return fail(errc::storage_error);
        }
        for (std::int8_t b = 0; b < nb && r.ok(); ++b) {
            batch_metadata m;
            m.first_seq = r.i32();
            m.last_seq = r.i32();
            m.first_offset = r.i64();
            m.last_offset = r.i64();
            m.timestamp = r.i64();
            e.batches.push_back(m);
        }
        if (e.current_txn_first_offset >= 0) {
            ongoing[e.current_txn_first_offset] = pid;
        }
        producers[pid] = std::move(e);
    }
    const std::int32_t na = r.i32();
    if (!r.ok() || na < 0 || static_cast<std::size_t>(na) > r.remaining() / 24) {
        return fail(errc::storage_error);
    }
    for (std::int32_t i = 0; i < na && r.ok(); ++i) {
        aborted_txn a;
        a.producer_id = r.i64();
        a.first_offset = r.i64();
        a.last_offset = r.i64();
        aborted.push_back(a);
    }
    if (!r.ok() || r.remaining() != 0) {
        return fail(errc::storage_error);
    }
    std::lock_guard lock(mu_);
    producers_ = std::move(producers);
    ongoing_ = std::move(ongoing);
    aborted_ = std::move(aborted);
    end_ = end;
    snapshot_end_ = end;
    snapshotted_changes_ = changes_;
    return {};
}

bool partition_producer_state::dirty() const {
    std::lock_guard lock(mu_);
    return changes_ != snapshotted_changes_;
}

void partition_producer_state::mark_snapshotted(std::int64_t end) {
    std::lock_guard lock(mu_);
    snapshot_end_ = end;
    snapshotted_changes_ = changes_;
}

std::int64_t partition_producer_state::snapshot_end() const {
    std::lock_guard lock(mu_);
    return snapshot_end_;
}

// --- append_guard ------------------------------------------------------------------------------

result<std::optional<log::append_result>> append_guard::check(const kafka::batch_header& h,
                                                              offset next_offset) {
    if (!h.has_producer_id()) {
        if (h.is_transactional() || (h.is_control() && !marker_)) {
            return fail(errc::invalid_txn_state);
        }
        return std::optional<log::append_result>();
    }
    auto it = scratch_.find(h.producer_id);
    if (it == scratch_.end()) {
        it = scratch_.emplace(h.producer_id, state_.entry(h.producer_id).value_or(producer_entry{}))
                 .first;
    }
    producer_entry& e = it->second;
    if (h.is_control()) {
        if (!marker_) {
            return fail(errc::invalid_txn_state);
        }
        if (auto ok = partition_producer_state::check_marker(e, h.producer_epoch,
                                                             marker_->coordinator_epoch);
            !ok) {
            return fail(ok.error());
        }
        e.epoch = std::max(e.epoch, h.producer_epoch);
        e.current_txn_first_offset = -1;
        return std::optional<log::append_result>();
    }
    return partition_producer_state::check_data(e, h, next_offset.value, verified_);
}

void append_guard::appended(const kafka::batch_header& h) {
    if (h.is_control()) {
        state_.apply(h, marker_);
    } else {
        state_.apply(h, std::nullopt);
    }
}

}  // namespace sluice::backend::producer
