// partition_log::compact: log compaction (cleanup.policy=compact) keeps the latest record of
// every key in the sealed segments and drops tombstones once delete.retention.ms has passed.
//
//   sealed, durable segments older than min.compaction.lag.ms     active segment (untouched)
//   [s0][s1][s2][s3] ...                                          [active]
//     1. key map: key -> offset of its latest record in [s0..sN)
//     2. rewrite into <dir>/cleaning/: consecutive segments merged while they fit
//        segment.bytes; a batch whose records all survive is copied byte for byte, one that
//        lost some is rebuilt with the survivors' encoded records, same base offset,
//        base timestamp and last offset delta (so offsets never change and producer
//        sequence ranges stay as they were), recompressed with its codec
//     3. fsync everything, write cleaning/range, rename cleaning/ -> swap/ (the commit point)
//     4. under the partition lock: replace the segments, move swap/* into place
//        (partition_recovery.cc's complete_swap, which also finishes a swap after a crash),
//        record the abort markers removed and bump the compaction generation
//
// Transactions, as Kafka's cleaner treats them: a transactional batch counts only once its
// marker is seen. The records of a committed transaction enter the key map at their offsets;
// those of an aborted one never do (they can never be read committed, so they must not
// supersede a committed record of the same key) and are removed. Batches of a transaction
// whose marker lies past what pass 1 mapped (still open, or beyond the memory budget) are
// copied as they are.
//
// A marker (commit or abort) is removed, like a tombstone, only when all of these hold:
//   - no record of its transaction is left: an aborted transaction's records all go in this
//     pass; a committed one's may all have been superseded. The cleanable range always starts
//     at the first segment and a transaction's data lies below its marker, so every batch of a
//     transaction whose marker was mapped is in the range and was looked at;
//   - it is older (its batch's max timestamp) than delete.retention.ms, so a consumer part-way
//     through the transaction has had that long to read it; an unknown timestamp keeps it;
//   - it is not the last batch of its producer in the mapped range: that batch holds the
//     producer's epoch and coordinator epoch for a replay of the log from the start (Kafka
//     keeps the last batch of an active producer for the same reason; a later batch of the
//     producer past the mapped range is not looked for, so the marker stays then too);
//   - it decodes as a commit or abort marker.
// Why an abort marker needs more than that: the partition's producer state lists aborted
// transactions in read_committed fetches, and a client skips the producer's transactional
// batches from the listed first offset until it reads the abort marker; a listed transaction
// whose marker is gone would hide that producer's later committed transactions. So the removed
// abort markers are recorded with the swap (removed_markers()), and the producer state drops
// those transactions before it next answers a fetch (producer_state.h, forget_removed); a
// fetch whose read saw the segments from before the swap reads again (compaction_generation).
// After a restart the list is empty: loading the producer state checks each aborted
// transaction of its snapshot against the log and drops those whose marker is gone, and a
// transaction the snapshot saw open whose first batch is gone (all its data and its marker
// were removed) is ended. Since a marker goes only with the last of its data, a replay never
// meets a committed transaction's data without its marker.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <unordered_map>
#include <vector>

#include "backend/io/file.h"
#include "backend/log/partition_log.h"
#include "backend/logger.h"
#include "protocol/core/assert.h"
#include "protocol/kafka/compression.h"
#include "protocol/kafka/record.h"

namespace sluice::backend::log {

namespace kafka = protocol::kafka;

namespace {

// What the first pass learns about the keys of the cleanable segments: the latest offset of
// each key. An open-addressing table over one buffer of key bytes: no allocation per key, and a
// lookup touches one slot and one key instead of a list node and a string (this is most of the
// compactor's time on a log of many short keys, such as __queue_state's).
class key_map {
public:
    explicit key_map(std::size_t budget) : budget_(budget) { slots_.resize(1024); }
    /// The latest offset wins (a committed transaction's records arrive when its marker is
    /// seen, after later records of other producers).
    void put(std::string_view key, std::int64_t off) {
        if ((count_ + 1) * 10 > slots_.size() * 7) {
            grow();
        }
        const std::uint64_t h = hash(key);
        slot& s = slots_[index_of(key, h)];
        if (s.empty()) {
            s.hash = h;
            s.pos = keys_.size();
            s.len = key.size();
            s.offset = off;
            keys_.append(key);
            ++count_;
            return;
        }
        s.offset = std::max(s.offset, off);
    }
    void put(protocol::bytes_view key, std::int64_t off) { put(protocol::as_chars(key), off); }
    std::int64_t latest(protocol::bytes_view key) const {
        const std::string_view k = protocol::as_chars(key);
        const slot& s = slots_[index_of(k, hash(k))];
        return s.empty() ? -1 : s.offset;
    }
    /// The key bytes plus the slots they take (at the table's worst load) against the budget.
    bool full() const { return keys_.size() + count_ * (sizeof(slot) * 10 / 7) >= budget_; }

private:
    struct slot {
        std::uint64_t hash = 0;
        std::uint64_t pos = npos;  // where the key starts in keys_; npos: empty
        std::uint64_t len = 0;
        std::int64_t offset = -1;
        bool empty() const { return pos == npos; }
    };
    static constexpr std::uint64_t npos = ~std::uint64_t{0};

    static std::uint64_t hash(std::string_view key) { return std::hash<std::string_view>{}(key); }
    // The slot holding `key`, or the empty slot where it would go.
    std::size_t index_of(std::string_view key, std::uint64_t h) const {
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = h & mask;; i = (i + 1) & mask) {
            const slot& s = slots_[i];
            if (s.empty() ||
                (s.hash == h && s.len == key.size() &&
                 std::string_view(keys_).substr(s.pos, s.len) == key)) {
                return i;
            }
        }
    }
    void grow() {
        std::vector<slot> old(slots_.size() * 2);
        old.swap(slots_);
        const std::size_t mask = slots_.size() - 1;
        for (const slot& s : old) {
            if (s.empty()) {
                continue;
            }
            std::size_t i = s.hash & mask;
            while (!slots_[i].empty()) {
                i = (i + 1) & mask;
            }
            slots_[i] = s;
        }
    }

    std::vector<slot> slots_;  // a power of two, at most 70% used
    std::string keys_;         // every key's bytes, back to back
    std::size_t count_ = 0;
    std::size_t budget_;
};

// What pass 1 learns about the transactions of the mapped segments.
class txn_outcomes {
public:
    enum class outcome { open, committed, aborted };

    /// A data batch of producer `pid` at `base`: its keys wait for the marker.
    void data(std::int64_t pid, std::int64_t base, std::vector<std::pair<std::string, std::int64_t>> keys) {
        auto& t = open_[pid];
        if (t.first < 0) {
            t.first = base;
        }
        for (auto& k : keys) {
            t.keys.push_back(std::move(k));
        }
    }
    /// The marker of `pid` at `marker`; a commit puts the transaction's keys into `map`.
    void marker(std::int64_t pid, std::int64_t marker, bool commit, key_map& map) {
        auto it = open_.find(pid);
        std::int64_t first = marker;
        if (it != open_.end()) {
            first = it->second.first;
            if (commit) {
                for (const auto& [k, off] : it->second.keys) {
                    map.put(std::string_view(k), off);
                }
            }
            open_.erase(it);
        }
        ranges_[pid].push_back({first, marker, commit});
    }
    /// The outcome of `pid`'s batch (or marker) at `off`.
    outcome of(std::int64_t pid, std::int64_t off) const {
        auto it = ranges_.find(pid);
        if (it != ranges_.end()) {
            for (const auto& r : it->second) {
                if (off >= r.first && off <= r.last) {
                    return r.commit ? outcome::committed : outcome::aborted;
                }
            }
        }
        return outcome::open;
    }

private:
    struct open_txn {
        std::int64_t first = -1;
        std::vector<std::pair<std::string, std::int64_t>> keys;
    };
    struct range {
        std::int64_t first;
        std::int64_t last;  // the marker's offset
        bool commit;
    };
    std::unordered_map<std::int64_t, open_txn> open_;
    std::unordered_map<std::int64_t, std::vector<range>> ranges_;
};

/// The marker a control batch holds; nullopt when it holds none or cannot be read.
std::optional<kafka::control_record_type> marker_type(protocol::bytes_view batch) {
    auto it = kafka::record_iterator::open(batch, kafka::default_max_decompressed_bytes);
    kafka::record_view r;
    if (!it || !it->next(r)) {
        return std::nullopt;
    }
    auto m = kafka::decode_end_txn_marker(r);
    if (!m) {
        return std::nullopt;
    }
    return m->type;
}

/// Whether a control batch holds a commit marker (an abort, or anything unreadable, is not).
bool is_commit_marker(protocol::bytes_view batch) {
    return marker_type(batch) == kafka::control_record_type::commit;
}

// The batch rebuilt with only the records `keep` says yes to; nullopt when all are kept.
struct filtered {
    bool all = true;
    std::int32_t kept = 0;
    protocol::byte_buffer bytes;
};

template <typename Keep>
result<filtered> filter_batch(protocol::bytes_view batch, Keep keep) {
    filtered out;
    auto it = kafka::record_iterator::open(batch, kafka::default_max_decompressed_bytes);
    if (!it) {
        return fail(it.error());
    }
    const kafka::batch_header& h = it->header();
    protocol::byte_buffer records;
    std::int64_t max_ts = -1;
    kafka::record_view r;
    while (it->next(r)) {
        if (keep(r)) {
            ++out.kept;
            records.append(r.encoded);
            max_ts = std::max(max_ts, r.timestamp);
        } else {
            out.all = false;
        }
    }
    if (it->error()) {
        return fail(it->error());
    }
    if (out.all || out.kept == 0) {
        return out;
    }
    out.bytes.resize(kafka::batch_header_size);
    if (h.codec() == kafka::compression::none) {
        out.bytes.append(records.view());
    } else if (auto c = kafka::compress(h.codec(), records.view(), out.bytes); !c) {
        return fail(c.error());
    }
    kafka::batch_header nh = h;
    nh.records_count = out.kept;
    nh.batch_length = static_cast<std::int32_t>(out.bytes.size() - kafka::batch_log_overhead);
    if (!h.uses_log_append_time()) {
        nh.max_timestamp = max_ts;
    }
    kafka::write_batch_header(out.bytes.mutable_view(), nh);
    protocol::store_u32(out.bytes.data() + kafka::batch_crc_offset,
                        kafka::compute_batch_crc(out.bytes.view()));
    return out;
}

}  // namespace

std::vector<std::shared_ptr<segment>> partition_log::cleanable_locked(std::int64_t now_ms,
                                                                      bool durable_only) const {
    std::vector<std::shared_ptr<segment>> out;
    const auto& cfg = *config_;
    for (std::size_t i = 0; i + 1 < segments_.size(); ++i) {
        const auto& s = segments_[i];
        const std::int64_t ts = s->max_timestamp >= 0 ? s->max_timestamp : s->first_append_ms;
        if (!s->sealed || (durable_only && !s->seal_persisted) || s->deleted ||
            s->corrupt_at >= 0 || (ts >= 0 && now_ms - ts < cfg.min_compaction_lag_ms)) {
            break;
        }
        out.push_back(s);
    }
    return out;
}

bool partition_log::needs_compaction(std::int64_t now_ms) const {
    std::lock_guard lock(mu_);
    if (closed_ || !config_->cleanup_compact) {
        return false;
    }
    std::uint64_t total = 0;
    std::uint64_t dirty = 0;
    bool overdue = false;
    for (const auto& s : cleanable_locked(now_ms, false)) {
        total += s->size;
        if (s->next_offset > compacted_until_) {
            dirty += s->size;
            const std::int64_t ts = s->max_timestamp >= 0 ? s->max_timestamp : s->first_append_ms;
            overdue = overdue || (ts >= 0 && now_ms - ts >= config_->max_compaction_lag_ms);
        }
    }
    return dirty > 0 &&
           (overdue || static_cast<double>(dirty) >=
                           config_->min_cleanable_dirty_ratio * static_cast<double>(total));
}

std::shared_ptr<segment> partition_log::adopt_compacted(const segment& o) {
    // The output now lives in the partition folder under the same name.
    auto seg = std::make_shared<segment>(env_->files, dir_, o.base_offset());
    seg->size = o.size;
    seg->next_offset = o.next_offset;
    seg->max_timestamp = o.max_timestamp;
    seg->max_timestamp_offset = o.max_timestamp_offset;
    seg->first_append_ms = o.first_append_ms;
    seg->sealed = true;
    seg->seal_persisted = true;
    seg->dir_durable = true;
    seg->synced = {seg->size, seg->next_offset, seg->max_timestamp, seg->max_timestamp_offset};
    (void)seg->offset_index().load(seg->size);
    (void)seg->time_index().load(seg->size);
    seg->reset_to(seg->synced);
    seg->mark_verified(0, seg->size);  // written (and CRC'd) by this process
    return seg;
}

result<compaction_result> partition_log::compact(std::int64_t now_ms) {
    std::lock_guard admin(admin_mu_);
    // Only durable, sealed segments are compacted: finish any pending seal first (this is a
    // background thread; the flusher would do the same).
    if (needs_sync()) {
        sync_round(false);
    }
    compaction_result out;
    std::vector<std::shared_ptr<segment>> inputs;
    std::shared_ptr<const topic_config> cfg;
    offset end{0};
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            return fail(errc::log_closed);
        }
        cfg = config_;
        if (!cfg->cleanup_compact) {
            return out;
        }
        inputs = cleanable_locked(now_ms, true);
        if (inputs.empty()) {
            return out;
        }
        end = segments_[inputs.size()]->base_offset();
    }
    auto& fs = env_->fs();

    // 1. The latest offset of every key, segment by segment until the memory budget is spent.
    key_map keys(env_->compaction_map_bytes);
    txn_outcomes txns;
    std::unordered_map<std::int64_t, std::int64_t> last_batch_of;  // producer id -> base offset
    std::size_t mapped = 0;
    for (const auto& s : inputs) {
        auto f = s->log_file().get();
        if (!f) {
            return fail(map_io_error(f.error(), "reading a segment to compact"));
        }
        batch_scanner scan(**f, 0, s->size, true, s->base_offset());
        batch_scanner::item it;
        while (true) {
            auto o = scan.next(it);
            if (!o) {
                return fail(map_io_error(o.error(), "reading a segment to compact"));
            }
            if (*o == batch_scanner::outcome::end) {
                break;
            }
            if (*o != batch_scanner::outcome::batch) {
                return fail(errc::segment_corrupt);
            }
            if (it.header.has_producer_id()) {
                last_batch_of[it.header.producer_id] = it.header.base_offset;
            }
            if (it.header.is_control()) {
                if (it.header.is_transactional()) {
                    txns.marker(it.header.producer_id, it.header.base_offset,
                                is_commit_marker(scan.last_batch()), keys);
                }
                continue;
            }
            auto records = kafka::record_iterator::open(scan.last_batch(),
                                                        kafka::default_max_decompressed_bytes);
            if (!records) {
                return fail(errc::segment_corrupt);
            }
            kafka::record_view r;
            if (it.header.is_transactional()) {
                std::vector<std::pair<std::string, std::int64_t>> pending;
                while (records->next(r)) {
                    if (r.key) {
                        pending.emplace_back(std::string(protocol::as_chars(*r.key)), r.offset);
                    }
                }
                txns.data(it.header.producer_id, it.header.base_offset, std::move(pending));
                continue;
            }
            while (records->next(r)) {
                if (r.key) {
                    keys.put(*r.key, r.offset);
                }
            }
        }
        ++mapped;
        if (keys.full()) {
            break;
        }
    }
    if (mapped < inputs.size()) {
        end = inputs[mapped]->base_offset();
        inputs.resize(mapped);
    }

    // 2. Rewrite into cleaning/, merging neighbours while they fit one segment.
    const std::string cleaning = io::join_path(dir_, "cleaning");
    if (auto r = fs.remove_all(cleaning); !r) {
        return fail(map_io_error(r.error(), "clearing the compaction folder"));
    }
    if (auto r = fs.create_directory(cleaning); !r) {
        return fail(map_io_error(r.error(), "creating the compaction folder"));
    }
    auto keep = [&](const kafka::record_view& r) {
        if (!r.key || keys.latest(*r.key) != r.offset) {
            return false;  // superseded, or no key (a compacted topic has no use for it)
        }
        // A tombstone stays readable for delete.retention.ms, then goes.
        return r.value.has_value() || now_ms - r.timestamp < cfg->delete_retention_ms;
    };
    // Producers whose current transaction (in the pass-2 walk) still has a record written.
    std::unordered_map<std::int64_t, bool> txn_has_data;
    auto marker_removable = [&](const kafka::batch_header& h, protocol::bytes_view batch) {
        const bool had_data = std::exchange(txn_has_data[h.producer_id], false);
        if (had_data || !h.is_transactional() || !marker_type(batch)) {
            return false;
        }
        if (txns.of(h.producer_id, h.base_offset) == txn_outcomes::outcome::open) {
            return false;  // not mapped in pass 1 (cannot happen for a mapped marker)
        }
        auto last = last_batch_of.find(h.producer_id);
        if (last == last_batch_of.end() || last->second == h.base_offset) {
            return false;
        }
        return h.max_timestamp >= 0 && now_ms - h.max_timestamp >= cfg->delete_retention_ms;
    };
    std::vector<removed_marker> removed;
    std::vector<std::shared_ptr<segment>> outputs;
    std::shared_ptr<segment> current;
    std::shared_ptr<io::file> current_file;
    for (const auto& s : inputs) {
        const std::uint64_t limit = static_cast<std::uint64_t>(cfg->segment_bytes);
        if (!current || current->size + s->size > limit ||
            s->next_offset - current->base_offset() >= std::numeric_limits<std::int32_t>::max()) {
            current = std::make_shared<segment>(env_->files, cleaning, s->base_offset());
            auto f = current->log_file().get();
            if (!f) {
                return fail(map_io_error(f.error(), "creating a compacted segment"));
            }
            current_file = *f;
            outputs.push_back(current);
        }
        out.bytes_before += static_cast<std::int64_t>(s->size);
        auto f = s->log_file().get();
        if (!f) {
            return fail(map_io_error(f.error(), "reading a segment to compact"));
        }
        batch_scanner scan(**f, 0, s->size, true, s->base_offset());
        batch_scanner::item it;
        while (true) {
            auto o = scan.next(it);
            if (!o) {
                return fail(map_io_error(o.error(), "reading a segment to compact"));
            }
            if (*o == batch_scanner::outcome::end) {
                break;
            }
            if (*o != batch_scanner::outcome::batch) {
                return fail(errc::segment_corrupt);
            }
            protocol::bytes_view bytes = scan.last_batch();
            filtered kept;
            const auto txn = it.header.is_transactional()
                                 ? txns.of(it.header.producer_id, it.header.base_offset)
                                 : txn_outcomes::outcome::committed;
            if (txn == txn_outcomes::outcome::aborted && !it.header.is_control()) {
                // Never readable committed.
                out.records_removed += it.header.records_count;
                continue;
            }
            if (it.header.is_control() && it.header.has_producer_id()) {
                if (marker_removable(it.header, bytes)) {
                    // Rules at the top of this file.
                    removed.push_back({it.header.producer_id, offset(it.header.base_offset),
                                       txn == txn_outcomes::outcome::committed});
                    ++out.markers_removed;
                    continue;
                }
            } else if (it.header.is_transactional() && txn != txn_outcomes::outcome::committed) {
                txn_has_data[it.header.producer_id] = true;  // open: copied as it is
            }
            if (!it.header.is_control() && txn == txn_outcomes::outcome::committed) {
                auto fb = filter_batch(bytes, keep);
                if (!fb) {
                    return fail(errc::segment_corrupt);
                }
                kept = std::move(*fb);
                out.records_removed += it.header.records_count - kept.kept;
                if (kept.kept == 0) {
                    continue;
                }
                if (it.header.is_transactional()) {
                    txn_has_data[it.header.producer_id] = true;
                }
                if (!kept.all) {
                    bytes = kept.bytes.view();
                }
            }
            auto h = kafka::read_batch_header(bytes);
            if (auto w = current_file->write_at(bytes, current->size); !w) {
                return fail(map_io_error(w.error(), "writing a compacted segment"));
            }
            current->index_batch(*h, current->size, cfg->index_interval_bytes);
            current->size += bytes.size();
            current->next_offset = offset(h->last_offset() + 1);
        }
        // Keep the input's offset range even if its last batches went: offsets are never
        // handed out twice, and the segment boundaries stay where they were.
        current->next_offset = std::max(current->next_offset, s->next_offset);
    }
    for (const auto& o : outputs) {
        auto f = o->log_file().get();
        if (!f) {
            return fail(map_io_error(f.error(), "syncing a compacted segment"));
        }
        if (auto r = (*f)->sync(); !r) {
            return fail(map_io_error(r.error(), "syncing a compacted segment"));
        }
        auto header = o->sealed_header();
        if (auto r = o->offset_index().write_sealed(header); !r) {
            return fail(map_io_error(r.error(), "writing a compacted index"));
        }
        if (auto r = o->time_index().write_sealed(header); !r) {
            return fail(map_io_error(r.error(), "writing a compacted index"));
        }
        o->log_file().close();
        out.bytes_after += static_cast<std::int64_t>(o->size);
    }
    std::string range = std::to_string(inputs.front()->base_offset().value) + " " +
                        std::to_string(end.value) + "\n";
    for (const auto& o : outputs) {
        range += std::to_string(o->base_offset().value) + " ";
    }
    range += "\n";
    if (auto r =
            io::write_file_atomic(fs, io::join_path(cleaning, "range"), protocol::as_bytes(range));
        !r) {
        return fail(map_io_error(r.error(), "writing the compaction range"));
    }
    // 3. The commit point.
    if (auto r = fs.rename(cleaning, io::join_path(dir_, "swap")); !r) {
        return fail(map_io_error(r.error(), "committing a compaction"));
    }
    if (auto r = fs.sync_dir(dir_); !r) {
        return fail(map_io_error(r.error(), "committing a compaction"));
    }

    // 4. Swap, with appends and new reads held off for the renames. Readers still holding an
    // old segment notice it was deleted and read again.
    bool swap_failed = false;
    {
        std::lock_guard lock(mu_);
        SLUICE_CHECK(segments_.size() > inputs.size());
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            SLUICE_CHECK(segments_[i] == inputs[i]);
            inputs[i]->deleted = true;
            inputs[i]->log_file().close();
            inputs[i]->offset_index().close_file();
            inputs[i]->time_index().close_file();
        }
        if (auto r = complete_swap(); !r) {
            // Some files may be moved and some not: serving either version could be wrong.
            // The partition closes; the next open finishes the swap from the swap folder.
            storage_log().error(
                "{}-{}: finishing a compaction swap failed ({}); the partition "
                "is closed until the broker restarts",
                topic_, id_.value, r.error().message());
            swap_failed = true;
        } else {
            std::vector<std::shared_ptr<segment>> fresh;
            for (const auto& o : outputs) {
                fresh.push_back(adopt_compacted(*o));
            }
            segments_.erase(segments_.begin(),
                            segments_.begin() + static_cast<std::ptrdiff_t>(inputs.size()));
            segments_.insert(segments_.begin(), fresh.begin(), fresh.end());
            size_bytes_ = 0;
            for (const auto& seg : segments_) {
                size_bytes_ += static_cast<std::int64_t>(seg->size);
            }
            compacted_until_ = std::max(compacted_until_, end);
            // Only abort markers matter to the producer state (it lists aborted transactions).
            for (const auto& m : removed) {
                if (!m.commit) {
                    removed_markers_.push_back(m);
                }
            }
            ++compaction_generation_;
        }
    }
    if (swap_failed) {
        (void)close(false);
        return fail(errc::storage_error);
    }
    out.segments_cleaned = static_cast<std::int32_t>(inputs.size());
    storage_log().info(
        "{}-{}: compacted {} segments into {} ({} -> {} bytes, {} records and {} transaction "
        "markers removed), offsets below {}",
        topic_, id_.value, inputs.size(), outputs.size(), out.bytes_before, out.bytes_after,
        out.records_removed, out.markers_removed, end.value);
    return out;
}

}  // namespace sluice::backend::log
