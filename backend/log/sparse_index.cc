#include "backend/log/sparse_index.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "backend/log/errc.h"
#include "protocol/core/crc32c.h"

namespace sluice::backend::log {
namespace {

using protocol::load_i64;
using protocol::load_u32;
using protocol::store_i64;
using protocol::store_u32;

constexpr std::uint16_t index_version = 1;
// Below this many file entries a lookup reads the whole file part at once.
constexpr std::size_t whole_read_entries = 4096;
// Binary search with single-entry reads narrows to this window, then reads it at once.
constexpr std::size_t search_window = 256;

const char* magic_of(index_kind k) {
    return k == index_kind::offset ? "SLOI" : "SLTI";
}

}  // namespace

void encode_index_header(index_kind kind, const index_header& h, std::byte* out) {
    std::memset(out, 0, index_header_size);
    std::memcpy(out, magic_of(kind), 4);
    protocol::store_i16(out + 4, static_cast<std::int16_t>(index_version));
    protocol::store_i16(out + 6, static_cast<std::int16_t>(h.sealed ? 1 : 0));
    store_u32(out + 8, h.log_size);
    store_u32(out + 12, h.next_delta);
    store_i64(out + 16, h.max_timestamp);
    store_u32(out + 24, h.max_ts_delta);
    store_u32(out + 28, h.entries_crc);
    store_u32(out + 32, protocol::crc32c(protocol::bytes_view(out, 32)));
}

result<index_header> decode_index_header(index_kind kind, protocol::bytes_view in) {
    if (in.size() < index_header_size) {
        return fail(errc::segment_corrupt);
    }
    const std::byte* p = in.data();
    if (std::memcmp(p, magic_of(kind), 4) != 0 ||
        static_cast<std::uint16_t>(protocol::load_i16(p + 4)) != index_version ||
        load_u32(p + 32) != protocol::crc32c(protocol::bytes_view(p, 32))) {
        return fail(errc::segment_corrupt);
    }
    index_header h;
    std::uint16_t flags = static_cast<std::uint16_t>(protocol::load_i16(p + 6));
    h.sealed = (flags & 1) != 0;
    h.log_size = load_u32(p + 8);
    h.next_delta = load_u32(p + 12);
    h.max_timestamp = load_i64(p + 16);
    h.max_ts_delta = load_u32(p + 24);
    h.entries_crc = load_u32(p + 28);
    return h;
}

sparse_index::sparse_index(index_kind kind, offset base, std::shared_ptr<io::file_cache> cache,
                           std::string path)
    : kind_(kind), base_(base), file_(std::move(cache), std::move(path), io::open_mode::create) {}

void sparse_index::encode(const index_entry& e, std::byte* out) const {
    if (kind_ == index_kind::offset) {
        store_u32(out, static_cast<std::uint32_t>(e.key - base_.value));
        store_u32(out + 4, static_cast<std::uint32_t>(e.value));
    } else {
        store_i64(out, e.key);
        store_u32(out + 8, static_cast<std::uint32_t>(e.value - base_.value));
    }
}

index_entry sparse_index::decode(const std::byte* in) const {
    if (kind_ == index_kind::offset) {
        return {base_.value + load_u32(in), static_cast<std::int64_t>(load_u32(in + 4))};
    }
    return {load_i64(in), base_.value + load_u32(in + 8)};
}

result<sparse_index::loaded> sparse_index::load(std::uint64_t log_size) {
    std::lock_guard lock(mu_);
    file_count_ = 0;
    file_last_.reset();
    tail_.clear();
    verified_ = true;
    damaged_ = false;
    log_size_ = log_size;
    loaded out;
    auto exists = file_.fs().exists(file_.path());
    if (!exists) {
        return fail(exists.error());
    }
    if (!*exists) {
        return out;
    }
    auto f = file_.get();
    if (!f) {
        return fail(f.error());
    }
    auto size = (*f)->size();
    if (!size) {
        return fail(size.error());
    }
    std::byte hdr[index_header_size];
    auto n = (*f)->read_at(hdr, 0);
    if (!n) {
        return fail(n.error());
    }
    auto h = decode_index_header(kind_, protocol::bytes_view(hdr, *n));
    if (!h) {
        out.damaged = true;
        return out;
    }
    const std::size_t es = entry_size(kind_);
    std::uint64_t body = *size - index_header_size;
    std::size_t count = static_cast<std::size_t>(body / es);
    auto in_bounds = [&](const index_entry& e) {
        if (kind_ == index_kind::offset) {
            return e.key >= base_.value && static_cast<std::uint64_t>(e.value) < log_size;
        }
        return e.value >= base_.value;
    };
    if (h->sealed) {
        if (body % es != 0) {
            out.damaged = true;
            return out;
        }
        if (count > 0) {
            std::vector<std::byte> last(es);
            auto r = (*f)->read_at(last, index_header_size + (count - 1) * es);
            if (!r || *r != es) {
                out.damaged = true;
                return out;
            }
            index_entry e = decode(last.data());
            if (!in_bounds(e) ||
                (kind_ == index_kind::offset && e.key - base_.value >= h->next_delta)) {
                out.damaged = true;
                return out;
            }
            file_last_ = e;
        }
        file_count_ = count;
        verified_ = false;  // checked in full on first use
        expected_crc_ = h->entries_crc;
        out.found = true;
        out.header = *h;
        out.entries = count;
        return out;
    }
    // Unsealed: keep the longest prefix of entries that are in order and in bounds.
    std::vector<std::byte> raw(count * es);
    auto r = (*f)->read_at(raw, index_header_size);
    if (!r) {
        return fail(r.error());
    }
    count = *r / es;
    std::size_t keep = 0;
    std::optional<index_entry> prev;
    for (; keep < count; ++keep) {
        index_entry e = decode(raw.data() + keep * es);
        if (!in_bounds(e)) {
            break;
        }
        if (prev) {
            if (e.key <= prev->key || e.value <= prev->value) {
                break;
            }
        }
        prev = e;
    }
    if (keep != count || body % es != 0) {
        out.damaged = true;
        (void)(*f)->truncate(index_header_size + keep * es);
    }
    file_count_ = keep;
    file_last_ = prev;
    out.found = true;
    out.header = *h;
    out.entries = keep;
    return out;
}

void sparse_index::append(index_entry e) {
    std::lock_guard lock(mu_);
    tail_.push_back(e);
}

std::optional<index_entry> sparse_index::last() const {
    std::lock_guard lock(mu_);
    if (!tail_.empty()) {
        return tail_.back();
    }
    return file_last_;
}

std::size_t sparse_index::size() const {
    std::lock_guard lock(mu_);
    return file_count_ + tail_.size();
}

std::size_t sparse_index::memory_bytes() const {
    std::lock_guard lock(mu_);
    return tail_.capacity() * sizeof(index_entry);
}

result<std::vector<index_entry>> sparse_index::read_file_entries(std::size_t first,
                                                                 std::size_t count) const {
    std::vector<index_entry> out;
    if (count == 0) {
        return out;
    }
    auto f = file_.get();
    if (!f) {
        return fail(f.error());
    }
    const std::size_t es = entry_size(kind_);
    std::vector<std::byte> raw(count * es);
    auto n = (*f)->read_at(raw, index_header_size + first * es);
    if (!n) {
        return fail(n.error());
    }
    if (*n != raw.size()) {
        return fail(errc::segment_corrupt);
    }
    out.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        out.push_back(decode(raw.data() + i * es));
    }
    return out;
}

result<std::optional<index_entry>> sparse_index::floor(std::int64_t key, bool strict) const {
    auto pred = [&](const index_entry& e) { return strict ? e.key < key : e.key <= key; };
    std::lock_guard lock(mu_);
    if (!verified_) {
        verify_locked();
    }
    if (!tail_.empty() && pred(tail_.front())) {
        auto it = std::partition_point(tail_.begin(), tail_.end(), pred);
        return std::optional<index_entry>(*(it - 1));
    }
    if (file_count_ == 0) {
        return std::optional<index_entry>();
    }
    if (file_last_ && pred(*file_last_)) {
        return file_last_;
    }
    std::optional<index_entry> best;
    std::size_t lo = 0;
    std::size_t hi = file_count_;  // the answer's successor lies in [lo, hi]
    if (hi > whole_read_entries) {
        while (hi - lo > search_window) {
            std::size_t mid = lo + (hi - lo) / 2;
            auto one = read_file_entries(mid, 1);
            if (!one) {
                return fail(one.error());
            }
            if (pred(one->front())) {
                best = one->front();
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
    }
    auto window = read_file_entries(lo, hi - lo);
    if (!window) {
        return fail(window.error());
    }
    for (const auto& e : *window) {
        if (!pred(e)) {
            break;
        }
        best = e;
    }
    return best;
}

void sparse_index::verify_locked() const {
    verified_ = true;
    const std::size_t es = entry_size(kind_);
    bool ok = false;
    if (auto f = file_.get(); f) {
        std::vector<std::byte> raw(file_count_ * es);
        auto n = (*f)->read_at(raw, index_header_size);
        if (n && *n == raw.size() && protocol::crc32c(raw) == expected_crc_) {
            ok = true;
            std::optional<index_entry> prev;
            for (std::size_t i = 0; i < file_count_ && ok; ++i) {
                index_entry e = decode(raw.data() + i * es);
                bool in_bounds =
                    kind_ == index_kind::offset
                        ? e.key >= base_.value && static_cast<std::uint64_t>(e.value) < log_size_
                        : e.value >= base_.value;
                ok = in_bounds && (!prev || (e.key > prev->key && e.value > prev->value));
                prev = e;
            }
        }
    }
    if (!ok) {
        damaged_ = true;
        file_count_ = 0;
        file_last_.reset();
    }
}

bool sparse_index::damaged() const {
    std::lock_guard lock(mu_);
    return damaged_;
}

void sparse_index::replace_all(std::vector<index_entry> entries) {
    std::lock_guard lock(mu_);
    file_count_ = 0;
    file_last_.reset();
    tail_ = std::move(entries);
    damaged_ = false;
    verified_ = true;
}

result<void> sparse_index::persist_below(std::int64_t value_limit) {
    std::lock_guard lock(mu_);
    std::size_t k = 0;
    while (k < tail_.size() && tail_[k].value < value_limit) {
        ++k;
    }
    if (k == 0) {
        return {};
    }
    auto f = file_.get();
    if (!f) {
        return fail(f.error());
    }
    const std::size_t es = entry_size(kind_);
    std::vector<std::byte> raw((file_count_ == 0 ? index_header_size : 0) + k * es);
    std::size_t at = 0;
    if (file_count_ == 0) {
        encode_index_header(kind_, index_header{}, raw.data());
        at = index_header_size;
    }
    for (std::size_t i = 0; i < k; ++i) {
        encode(tail_[i], raw.data() + at + i * es);
    }
    std::uint64_t pos = file_count_ == 0 ? 0 : index_header_size + file_count_ * es;
    if (auto w = (*f)->write_at(raw, pos); !w) {
        return w;
    }
    file_count_ += k;
    file_last_ = tail_[k - 1];
    tail_.erase(tail_.begin(), tail_.begin() + static_cast<std::ptrdiff_t>(k));
    return {};
}

result<std::vector<index_entry>> sparse_index::all_locked() const {
    if (!verified_) {
        verify_locked();
    }
    auto out = read_file_entries(0, file_count_);
    if (!out) {
        return out;
    }
    out->insert(out->end(), tail_.begin(), tail_.end());
    return out;
}

result<std::vector<index_entry>> sparse_index::all() const {
    std::lock_guard lock(mu_);
    return all_locked();
}

result<void> sparse_index::write_whole(const index_header& h,
                                       const std::vector<index_entry>& entries, bool sync) {
    const std::size_t es = entry_size(kind_);
    std::vector<std::byte> raw(index_header_size + entries.size() * es);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        encode(entries[i], raw.data() + index_header_size + i * es);
    }
    index_header full = h;
    full.entries_crc = protocol::crc32c(protocol::bytes_view(raw).subspan(index_header_size));
    encode_index_header(kind_, full, raw.data());
    std::string tmp = file_.path() + ".tmp";
    {
        auto f = file_.fs().open(tmp, io::open_mode::create_new);
        if (!f) {
            return fail(f.error());
        }
        if (auto w = (*f)->write_at(raw, 0); !w) {
            return w;
        }
        if (sync) {
            if (auto s = (*f)->sync(); !s) {
                return s;
            }
        }
    }
    std::lock_guard lock(mu_);
    if (auto r = file_.fs().rename(tmp, file_.path()); !r) {
        return r;
    }
    file_.close();
    // Entries appended since the snapshot (none for a sealed segment) stay in the tail.
    std::size_t extra = file_count_ + tail_.size() - entries.size();
    tail_.erase(tail_.begin(), tail_.end() - static_cast<std::ptrdiff_t>(extra));
    file_count_ = entries.size();
    file_last_ = entries.empty() ? std::nullopt : std::optional<index_entry>(entries.back());
    verified_ = true;
    damaged_ = false;
    return {};
}

result<void> sparse_index::write_sealed(const index_header& h) {
    std::vector<index_entry> entries;
    {
        std::lock_guard lock(mu_);
        auto all = all_locked();
        if (!all) {
            return fail(all.error());
        }
        entries = std::move(*all);
    }
    return write_whole(h, entries, true);
}

result<void> sparse_index::write_unsealed_all() {
    std::vector<index_entry> entries;
    {
        std::lock_guard lock(mu_);
        if (tail_.empty() && file_count_ > 0) {
            return {};  // the file already holds every entry
        }
        auto all = all_locked();
        if (!all) {
            return fail(all.error());
        }
        entries = std::move(*all);
    }
    return write_whole(index_header{}, entries, true);
}

result<void> sparse_index::truncate_values_from(std::int64_t value_limit) {
    std::lock_guard lock(mu_);
    if (!verified_) {
        verify_locked();
    }
    while (!tail_.empty() && tail_.back().value >= value_limit) {
        tail_.pop_back();
    }
    if (!tail_.empty() || !file_last_ || file_last_->value < value_limit) {
        return {};
    }
    auto entries = read_file_entries(0, file_count_);
    if (!entries) {
        return fail(entries.error());
    }
    std::size_t keep = 0;
    while (keep < entries->size() && (*entries)[keep].value < value_limit) {
        ++keep;
    }
    auto f = file_.get();
    if (!f) {
        return fail(f.error());
    }
    std::uint64_t size = keep == 0 ? 0 : index_header_size + keep * entry_size(kind_);
    if (auto t = (*f)->truncate(size); !t) {
        return t;
    }
    file_count_ = keep;
    file_last_ = keep == 0 ? std::nullopt : std::optional<index_entry>((*entries)[keep - 1]);
    return {};
}

result<void> sparse_index::reset() {
    std::lock_guard lock(mu_);
    tail_.clear();
    file_count_ = 0;
    file_last_.reset();
    verified_ = true;
    damaged_ = false;
    file_.close();
    return file_.fs().remove(file_.path());
}

}  // namespace sluice::backend::log
