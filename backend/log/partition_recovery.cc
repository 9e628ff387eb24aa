// partition_log::open's recovery: finish an interrupted compaction swap, load and check every
// segment, cut a torn tail, rebuild damaged indexes, report corruption.
#include <algorithm>
#include <charconv>
#include <set>
#include <span>
#include <vector>

#include "backend/io/file.h"
#include "backend/log/partition_log.h"
#include "backend/logger.h"

namespace sluice::backend::log {

namespace kafka = protocol::kafka;

namespace {

// "<20 digits><ext>" -> base offset.
std::optional<offset> parse_segment_name(std::string_view name, std::string_view ext) {
    if (name.size() != 20 + ext.size() || !name.ends_with(ext)) {
        return std::nullopt;
    }
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + 20, v);
    if (ec != std::errc{} || p != name.data() + 20 || v < 0) {
        return std::nullopt;
    }
    return offset(v);
}

std::optional<offset> segment_file_base(std::string_view name) {
    for (const char* ext : {".log", ".index", ".timeindex"}) {
        if (auto b = parse_segment_name(name, ext)) {
            return b;
        }
    }
    return std::nullopt;
}

std::optional<std::int64_t> parse_int(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
        text.remove_suffix(1);
    }
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || p != text.data() + text.size() || text.empty()) {
        return std::nullopt;
    }
    return v;
}

// After a bad batch at `at`: does a valid batch follow it? Then the damage is in the middle of
// written data (bit rot), not a torn tail, which is always the last thing written.
bool valid_batch_follows(io::file& f, std::uint64_t at, std::uint64_t size) {
    std::byte hdr[kafka::batch_log_overhead];
    auto n = f.read_at(hdr, at);
    if (!n || *n < sizeof hdr) {
        return false;
    }
    std::int32_t len = protocol::load_i32(hdr + 8);
    if (len < static_cast<std::int32_t>(kafka::batch_header_size - kafka::batch_log_overhead)) {
        return false;
    }
    std::uint64_t next = at + kafka::batch_log_overhead + static_cast<std::uint64_t>(len);
    if (next >= size) {
        return false;
    }
    batch_scanner scan(f, next, size, true, offset(0));
    batch_scanner::item it;
    auto o = scan.next(it);
    return o && *o == batch_scanner::outcome::batch;
}

// Are the bytes [from, to) all zero? Zeros written ahead of the active segment's end look so
// (partition_log::zero_ahead_locked), and so does a tail whose pages never reached the disk.
result<bool> all_zero(io::file& f, std::uint64_t from, std::uint64_t to) {
    std::vector<std::byte> buf(std::min<std::uint64_t>(to - from, 256 << 10));
    for (std::uint64_t at = from; at < to;) {
        auto n = f.read_at(std::span(buf.data(), std::min<std::uint64_t>(buf.size(), to - at)),
                           at);
        if (!n) {
            return fail(n.error());
        }
        if (*n == 0) {
            break;
        }
        for (std::size_t i = 0; i < *n; ++i) {
            if (buf[i] != std::byte{0}) {
                return false;
            }
        }
        at += *n;
    }
    return true;
}

}  // namespace

result<void> partition_log::complete_swap() {
    // Layout of <dir>/swap/ (compactor.cc writes it, then renames cleaning/ to swap/):
    //   range     "<first> <end>\n<output base> <output base> ...\n": the cleaned segments
    //             replace every segment with a base offset in [first, end)
    //   <base>.log/.index/.timeindex   the cleaned segments, fsynced, indexes sealed
    auto& fs = env_->fs();
    const std::string swap_dir = io::join_path(dir_, "swap");
    auto range_text = io::read_whole_file(fs, io::join_path(swap_dir, "range"));
    if (!range_text) {
        return fail(range_text.error());
    }
    std::string_view text(reinterpret_cast<const char*>(range_text->data()), range_text->size());
    std::vector<std::int64_t> numbers;
    while (!text.empty()) {
        auto sp = text.find_first_of(" \n");
        auto tok = text.substr(0, sp);
        if (!tok.empty()) {
            auto v = parse_int(tok);
            if (!v) {
                return fail(errc::segment_corrupt);
            }
            numbers.push_back(*v);
        }
        if (sp == std::string_view::npos) {
            break;
        }
        text.remove_prefix(sp + 1);
    }
    if (numbers.size() < 2) {
        return fail(errc::segment_corrupt);
    }
    const offset first(numbers[0]);
    const offset end(numbers[1]);
    std::set<std::int64_t> outputs(numbers.begin() + 2, numbers.end());
    auto names = fs.list(dir_);
    if (!names) {
        return fail(names.error());
    }
    for (const auto& name : *names) {
        auto base = segment_file_base(name);
        if (base && *base >= first && *base < end && outputs.count(base->value) == 0) {
            if (auto r = fs.remove(io::join_path(dir_, name)); !r) {
                return r;
            }
        }
    }
    auto swapped = fs.list(swap_dir);
    if (!swapped) {
        return fail(swapped.error());
    }
    for (const auto& name : *swapped) {
        if (name == "range") {
            continue;
        }
        if (auto r = fs.rename(io::join_path(swap_dir, name), io::join_path(dir_, name)); !r) {
            return r;
        }
    }
    if (auto r = fs.sync_dir(dir_); !r) {
        return r;
    }
    if (auto r = fs.remove_all(swap_dir); !r) {
        return r;
    }
    return fs.sync_dir(dir_);
}

result<void> partition_log::recover_swaps(std::vector<std::string>& names) {
    auto& fs = env_->fs();
    bool changed = false;
    if (std::find(names.begin(), names.end(), "cleaning") != names.end()) {
        // A compaction that had not committed: its output is discarded.
        if (auto r = fs.remove_all(io::join_path(dir_, "cleaning")); !r) {
            return r;
        }
        changed = true;
    }
    if (std::find(names.begin(), names.end(), "swap") != names.end()) {
        storage_log().info("{}-{}: completing an interrupted compaction swap", topic_, id_.value);
        if (auto r = complete_swap(); !r) {
            return r;
        }
        changed = true;
    }
    if (changed) {
        auto fresh = fs.list(dir_);
        if (!fresh) {
            return fail(fresh.error());
        }
        names = std::move(*fresh);
    }
    return {};
}

result<partition_log::segment_check> partition_log::recover_segment(segment& seg, io::file& f,
                                                                    std::uint64_t file_size,
                                                                    const topic_config& cfg) {
    segment_check out;
    const offset base = seg.base_offset();
    auto oi = seg.offset_index().load(file_size);
    if (!oi) {
        return fail(oi.error());
    }
    auto ti = seg.time_index().load(file_size);
    if (!ti) {
        return fail(ti.error());
    }
    const bool sealed_hdr = oi->found && oi->header.sealed;
    out.was_sealed = sealed_hdr;
    if (sealed_hdr && !oi->damaged && ti->found && ti->header.sealed && !ti->damaged &&
        oi->header.log_size == file_size && ti->header.log_size == file_size) {
        // Sealed after an fsync and untouched since: trusted without reading it.
        const index_header& h = oi->header;
        seg.size = file_size;
        seg.next_offset = base + h.next_delta;
        seg.max_timestamp = h.max_timestamp;
        seg.max_timestamp_offset = h.max_timestamp < 0 ? offset(-1) : base + h.max_ts_delta;
        seg.sealed = true;
        seg.seal_persisted = true;
        seg.synced = {seg.size, seg.next_offset, seg.max_timestamp, seg.max_timestamp_offset};
        seg.reset_to(seg.synced);
        return out;
    }
    if (sealed_hdr && oi->header.log_size != file_size) {
        storage_log().error("{}-{}: segment {} is {} bytes but was sealed at {} bytes", topic_,
                            id_.value, base.value, file_size, oi->header.log_size);
    }
    bool rebuild =
        oi->damaged || ti->damaged || sealed_hdr || (oi->entries == 0) != (ti->entries == 0);
    std::uint64_t scanned_from = 0;
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (rebuild) {
            if (auto r = seg.offset_index().reset(); !r) {
                return fail(r.error());
            }
            if (auto r = seg.time_index().reset(); !r) {
                return fail(r.error());
            }
        }
        seg.max_timestamp = -1;
        seg.max_timestamp_offset = offset(-1);
        seg.has_index_entry = false;
        seg.last_index_position = 0;
        seg.last_time_entry = -1;
        seg.next_offset = base;
        seg.size = 0;
        std::uint64_t start_pos = 0;
        offset min_next = base;
        if (!rebuild) {
            auto last_offset_entry = seg.offset_index().last();
            auto last_time = seg.time_index().last();
            if (last_offset_entry) {
                index_entry from = *last_offset_entry;
                if (last_time) {
                    // Rescan from the batch that holds the last indexed max timestamp, so the
                    // segment's max timestamp and its offset come out exact.
                    auto t = seg.offset_index().floor(last_time->value, false);
                    if (!t) {
                        return fail(t.error());
                    }
                    if (*t && (*t)->value < from.value) {
                        from = **t;
                    }
                    seg.max_timestamp = last_time->key;
                    seg.max_timestamp_offset = offset(last_time->value);
                    seg.last_time_entry = last_time->key;
                }
                seg.has_index_entry = true;
                seg.last_index_position = static_cast<std::uint64_t>(last_offset_entry->value);
                start_pos = static_cast<std::uint64_t>(from.value);
                min_next = offset(from.key);
                seg.next_offset = min_next;
                seg.size = start_pos;
            }
        }
        scanned_from = start_pos;
        batch_scanner scan(f, start_pos, file_size, true, min_next);
        batch_scanner::item it;
        bool first = true;
        bool restart = false;
        while (true) {
            auto o = scan.next(it);
            if (!o) {
                return fail(o.error());
            }
            if (*o == batch_scanner::outcome::end) {
                break;
            }
            if (*o != batch_scanner::outcome::batch) {
                out.what = sealed_hdr ? segment_check::kind::corrupt : segment_check::kind::torn;
                out.at = scan.position();
                out.reason = scan.reason();
                break;
            }
            if (first && !rebuild && it.header.base_offset != min_next.value) {
                restart = true;  // the index entry does not point at a batch boundary
                break;
            }
            first = false;
            recovery_.bytes_validated += static_cast<std::int64_t>(it.header.total_size());
            if (seg.has_index_entry && it.position <= seg.last_index_position) {
                if (it.header.max_timestamp > seg.max_timestamp) {
                    seg.max_timestamp = it.header.max_timestamp;
                    seg.max_timestamp_offset = offset(it.header.base_offset);
                }
            } else {
                seg.index_batch(it.header, it.position, cfg.index_interval_bytes);
            }
            seg.next_offset = offset(it.header.last_offset() + 1);
            seg.size = it.position + it.header.total_size();
        }
        if (restart) {
            rebuild = true;
            out = segment_check{};
            out.was_sealed = sealed_hdr;
            continue;
        }
        break;
    }
    seg.mark_verified(scanned_from, seg.size);  // just checked
    if (scanned_from == 0) {
        if (file_size > 0 && (rebuild || !oi->found || !ti->found)) {
            ++recovery_.indexes_rebuilt;  // rebuilt, or built because the files were missing
        }
    }
    if (out.what != segment_check::kind::ok) {
        (void)seg.offset_index().truncate_values_from(static_cast<std::int64_t>(seg.size));
        (void)seg.time_index().truncate_values_from(seg.next_offset.value);
        seg.reset_to({seg.size, seg.next_offset, seg.max_timestamp, seg.max_timestamp_offset});
        if (sealed_hdr) {
            // Offsets up to the sealed end were handed out; never reuse them.
            seg.next_offset = std::max(seg.next_offset, base + oi->header.next_delta);
        }
    }
    return out;
}

result<void> partition_log::recover(bool clean_shutdown) {
    auto& fs = env_->fs();
    auto cfg = config_;
    if (auto r = fs.create_directory(dir_); !r) {
        return fail(map_io_error(r.error(), "creating a partition folder"));
    }
    auto listed = fs.list(dir_);
    if (!listed) {
        return fail(map_io_error(listed.error(), "listing a partition folder"));
    }
    std::vector<std::string> names = std::move(*listed);
    if (auto r = recover_swaps(names); !r) {
        return fail(map_io_error(r.error(), "completing a compaction swap"));
    }
    std::set<std::int64_t> logs;
    for (const auto& name : names) {
        if (name.ends_with(".tmp") || name.ends_with(".deleted")) {
            (void)fs.remove(io::join_path(dir_, name));
        } else if (auto b = parse_segment_name(name, ".log")) {
            logs.insert(b->value);
        }
    }
    for (const auto& name : names) {
        auto b = segment_file_base(name);
        if (b && !name.ends_with(".log") && logs.count(b->value) == 0) {
            (void)fs.remove(io::join_path(dir_, name));  // an index whose segment was deleted
        }
    }
    std::optional<offset> checkpoint;
    const std::string start_path = io::join_path(dir_, "log-start-offset");
    if (auto has = fs.exists(start_path); has && *has) {
        auto text = io::read_whole_file(fs, start_path);
        std::optional<std::int64_t> v;
        if (text) {
            v = parse_int(
                std::string_view(reinterpret_cast<const char*>(text->data()), text->size()));
        }
        if (v && *v >= 0) {
            checkpoint = offset(*v);
        } else {
            storage_log().warn("{}-{}: ignoring an unreadable log-start-offset file", topic_,
                               id_.value);
        }
    }

    std::vector<offset> bases;
    for (auto v : logs) {
        bases.emplace_back(v);
    }
    for (std::size_t i = 0; i < bases.size(); ++i) {
        auto seg = std::make_shared<segment>(env_->files, dir_, bases[i]);
        auto f = seg->log_file().get();
        if (!f) {
            return fail(map_io_error(f.error(), "opening a segment"));
        }
        auto size = (*f)->size();
        if (!size) {
            return fail(map_io_error(size.error(), "reading a segment's size"));
        }
        auto check = recover_segment(*seg, **f, *size, *cfg);
        if (!check) {
            return fail(map_io_error(check.error(), "recovering a segment"));
        }
        if (check->what == segment_check::kind::torn) {
            // Zeros after the last whole batch were written ahead (or never written back). On
            // the last segment they are cut without a word. Before a later segment they are
            // the clean end of a segment rolled before its zeros were cut, provided its
            // offsets run on into the next segment; otherwise batches are missing, a torn tail.
            auto zeros = all_zero(**f, check->at, *size);
            if (!zeros) {
                return fail(map_io_error(zeros.error(), "reading a segment"));
            }
            if (*zeros && (i + 1 == bases.size() || seg->next_offset == bases[i + 1])) {
                if (auto t = (*f)->truncate(check->at); !t) {
                    return fail(map_io_error(t.error(), "cutting the zeros after a segment"));
                }
                check->what = segment_check::kind::ok;
                *size = check->at;
            }
        }
        if (check->what == segment_check::kind::torn && i + 1 < bases.size() &&
            valid_batch_follows(**f, check->at, *size)) {
            check->what = segment_check::kind::corrupt;
        }
        if (check->what == segment_check::kind::corrupt) {
            if (i + 1 < bases.size()) {
                seg->next_offset = std::max(seg->next_offset, bases[i + 1]);
            }
            ++recovery_.corrupt_segments;
            seg->corrupt_at = static_cast<std::int64_t>(check->at);
            seg->size = *size;
            seg->sealed = true;
            storage_log().error(
                "{}-{}: sealed segment {} is corrupt at byte {} of {} ({}); offsets from {} in "
                "it are not served; later segments are kept",
                topic_, id_.value, bases[i].value, check->at, *size, check->reason,
                seg->next_offset.value);
        } else if (check->what == segment_check::kind::torn) {
            std::uint64_t cut = *size - check->at;
            if (auto t = (*f)->truncate(check->at); !t) {
                return fail(map_io_error(t.error(), "truncating a torn segment"));
            }
            recovery_.truncated_bytes += static_cast<std::int64_t>(cut);
            storage_log().warn(
                "{}-{}: truncated {} bytes at byte {} of segment {} ({}); log end offset is {}",
                topic_, id_.value, cut, check->at, bases[i].value, check->reason,
                seg->next_offset.value);
            // Nothing after a torn point was ever acknowledged as durable (segments are
            // fsynced in order), so later segments go too.
            std::vector<std::shared_ptr<segment>> dead;
            for (std::size_t j = i + 1; j < bases.size(); ++j) {
                dead.push_back(std::make_shared<segment>(env_->files, dir_, bases[j]));
            }
            if (!dead.empty()) {
                recovery_.segments_dropped += static_cast<std::int32_t>(dead.size());
                storage_log().warn("{}-{}: deleted {} segments after the torn point", topic_,
                                   id_.value, dead.size());
                delete_segment_files(dead);
            }
            segments_.push_back(seg);
            break;
        }
        segments_.push_back(seg);
    }

    const std::int64_t now = env_->clock();
    if (segments_.empty() || segments_.back()->sealed) {
        offset base =
            segments_.empty() ? checkpoint.value_or(offset(0)) : segments_.back()->next_offset;
        auto seg = std::make_shared<segment>(env_->files, dir_, base);
        if (auto f = seg->log_file().get(); !f) {
            return fail(map_io_error(f.error(), "creating a segment"));
        }
        segments_.push_back(seg);
    }
    size_bytes_ = 0;
    for (std::size_t i = 0; i < segments_.size(); ++i) {
        auto& s = segments_[i];
        const bool last = i + 1 == segments_.size();
        if (!last) {
            s->sealed = true;
        }
        if (!s->seal_persisted) {
            s->synced = {s->size, s->next_offset, s->max_timestamp, s->max_timestamp_offset};
            // After a crash, bytes read back may sit only in the page cache: sync them again.
            s->force_sync = !clean_shutdown && s->size > 0;
        }
        s->dir_durable = clean_shutdown || s->seal_persisted;
        s->allocated = s->size;
        size_bytes_ += static_cast<std::int64_t>(s->size);
    }
    auto active = segments_.back();
    if (active->size > 0) {
        std::byte hdr[kafka::batch_header_size];
        auto f = active->log_file().get();
        if (f) {
            auto n = (*f)->read_at(hdr, 0);
            if (n && *n == sizeof hdr) {
                auto h = kafka::read_batch_header(protocol::bytes_view(hdr, sizeof hdr));
                if (h && h->max_timestamp >= 0) {
                    active->first_append_ms = std::min(now, h->max_timestamp);
                }
            }
        }
        if (active->first_append_ms < 0) {
            active->first_append_ms = now;
        }
    }
    log_end_ = active->next_offset;
    flushed_ = log_end_;
    log_start_ = segments_.front()->base_offset();
    if (checkpoint && *checkpoint > log_start_) {
        log_start_ = std::min(*checkpoint, log_end_);
    }
    return {};
}

}  // namespace sluice::backend::log
