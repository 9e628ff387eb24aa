// Byte buffers, and the bounds-checked reader and growable writer that every codec uses.
//
// The reader has a sticky error: once a read fails (input too short, bad varint, a length
// that points past the end) every later read returns a zero value and the first error is kept.
// Decoders read all fields and check ok() once, which keeps generated code small. A length or
// count is always checked against the bytes left before anything is allocated for it.
//
// The writer appends to one contiguous buffer and can also splice in external chunks (record
// bytes owned by someone else, or a region of a segment file) without copying them; the
// connection turns the result into writev/sendfile calls.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/core/errc.h"
#include "protocol/core/uuid.h"
#include "protocol/core/varint.h"

namespace sluice::protocol {

using bytes_view = std::span<const std::byte>;

inline bytes_view as_bytes(std::string_view s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
inline std::string_view as_chars(bytes_view b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

/// Immutable bytes that someone else owns; `owner` keeps them alive.
struct shared_bytes {
    std::shared_ptr<const void> owner;
    bytes_view data;
};

/// A byte range of an open file, sent with sendfile where the transport allows.
/// `owner` keeps the descriptor open until the bytes are sent.
struct file_region {
    std::shared_ptr<const void> owner;
    int fd = -1;
    std::uint64_t position = 0;
    std::uint32_t length = 0;
};

/// A growable byte array that does not zero what it reserves (unlike std::vector).
class byte_buffer {
public:
    byte_buffer() = default;
    explicit byte_buffer(std::size_t capacity) { reserve(capacity); }
    byte_buffer(const byte_buffer& o) { append(o.view()); }
    byte_buffer& operator=(const byte_buffer& o) {
        if (this != &o) {
            size_ = 0;
            append(o.view());
        }
        return *this;
    }
    byte_buffer(byte_buffer&& o) noexcept
        : data_(std::move(o.data_)), size_(o.size_), capacity_(o.capacity_) {
        o.size_ = o.capacity_ = 0;
    }
    byte_buffer& operator=(byte_buffer&& o) noexcept {
        data_ = std::move(o.data_);
        size_ = o.size_;
        capacity_ = o.capacity_;
        o.size_ = o.capacity_ = 0;
        return *this;
    }

    std::byte* data() { return data_.get(); }
    const std::byte* data() const { return data_.get(); }
    std::size_t size() const { return size_; }
    std::size_t capacity() const { return capacity_; }
    bool empty() const { return size_ == 0; }
    bytes_view view() const { return {data_.get(), size_}; }
    std::span<std::byte> mutable_view() { return {data_.get(), size_}; }

    void reserve(std::size_t n) {
        if (n <= capacity_) {
            return;
        }
        std::size_t cap = std::max<std::size_t>(n, capacity_ * 2);
        auto fresh = std::unique_ptr<std::byte[]>(new std::byte[cap]);
        if (size_ > 0) {
            std::memcpy(fresh.get(), data_.get(), size_);
        }
        data_ = std::move(fresh);
        capacity_ = cap;
    }
    /// Grows the size by n and returns a pointer to the new (uninitialised) bytes.
    std::byte* grow(std::size_t n) {
        reserve(size_ + n);
        std::byte* p = data_.get() + size_;
        size_ += n;
        return p;
    }
    void resize(std::size_t n) {
        reserve(n);
        size_ = n;
    }
    void clear() { size_ = 0; }
    void append(bytes_view b) {
        if (!b.empty()) {
            std::memcpy(grow(b.size()), b.data(), b.size());
        }
    }

private:
    std::unique_ptr<std::byte[]> data_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

namespace detail {
template <typename T>
T load_be(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    if constexpr (std::endian::native == std::endian::little && sizeof(T) > 1) {
        v = std::byteswap(v);
    }
    return v;
}
template <typename T>
void store_be(std::byte* p, T v) {
    if constexpr (std::endian::native == std::endian::little && sizeof(T) > 1) {
        v = std::byteswap(v);
    }
    std::memcpy(p, &v, sizeof(T));
}
}  // namespace detail

/// Big-endian loads and stores for fixed-layout headers (record batches, index entries).
inline std::int16_t load_i16(const std::byte* p) { return detail::load_be<std::int16_t>(p); }
inline std::int32_t load_i32(const std::byte* p) { return detail::load_be<std::int32_t>(p); }
inline std::int64_t load_i64(const std::byte* p) { return detail::load_be<std::int64_t>(p); }
inline std::uint32_t load_u32(const std::byte* p) { return detail::load_be<std::uint32_t>(p); }
inline void store_i16(std::byte* p, std::int16_t v) { detail::store_be(p, v); }
inline void store_i32(std::byte* p, std::int32_t v) { detail::store_be(p, v); }
inline void store_i64(std::byte* p, std::int64_t v) { detail::store_be(p, v); }
inline void store_u32(std::byte* p, std::uint32_t v) { detail::store_be(p, v); }

/// Bounds-checked reader over bytes it does not own. See the file comment for the error model.
class reader {
public:
    explicit reader(bytes_view data, std::shared_ptr<const void> owner = {})
        : begin_(data.data()), pos_(data.data()), end_(data.data() + data.size()),
          owner_(std::move(owner)) {}

    bool ok() const { return !error_; }
    std::error_code error() const { return error_; }
    /// Records the first failure; later reads return zero values.
    void fail(errc e) {
        if (!error_) {
            error_ = make_error_code(e);
        }
        pos_ = end_;
    }
    std::size_t remaining() const { return static_cast<std::size_t>(end_ - pos_); }
    std::size_t position() const { return static_cast<std::size_t>(pos_ - begin_); }
    bytes_view rest() const { return {pos_, remaining()}; }
    /// Whoever keeps the underlying bytes alive (may be empty: then views must be copied).
    const std::shared_ptr<const void>& owner() const { return owner_; }

    std::int8_t i8() { return fixed<std::int8_t>(); }
    std::int16_t i16() { return fixed<std::int16_t>(); }
    std::int32_t i32() { return fixed<std::int32_t>(); }
    std::int64_t i64() { return fixed<std::int64_t>(); }
    std::uint16_t u16() { return fixed<std::uint16_t>(); }
    std::uint32_t u32() { return fixed<std::uint32_t>(); }
    bool boolean() { return fixed<std::uint8_t>() != 0; }
    double f64() { return std::bit_cast<double>(fixed<std::uint64_t>()); }
    uuid read_uuid() {
        uuid u;
        if (need(16)) {
            std::memcpy(u.bytes.data(), pos_, 16);
            pos_ += 16;
        }
        return u;
    }

    std::uint32_t uvarint() {
        std::uint64_t v = 0;
        std::size_t n = get_uvarint(pos_, end_, v, 5);
        if (n == 0 || v > 0xffffffffu) {
            fail(pos_ >= end_ ? errc::truncated : errc::invalid_varint);
            return 0;
        }
        pos_ += n;
        return static_cast<std::uint32_t>(v);
    }
    std::uint64_t uvarlong() {
        std::uint64_t v = 0;
        std::size_t n = get_uvarint(pos_, end_, v, 10);
        if (n == 0) {
            fail(pos_ >= end_ ? errc::truncated : errc::invalid_varint);
            return 0;
        }
        pos_ += n;
        return v;
    }
    std::int32_t varint() { return unzigzag32(uvarint()); }
    std::int64_t varlong() { return unzigzag64(uvarlong()); }

    /// The next n bytes as a view (empty and failed when fewer are left).
    bytes_view take(std::size_t n) {
        if (!need(n)) {
            return {};
        }
        bytes_view v{pos_, n};
        pos_ += n;
        return v;
    }
    void skip(std::size_t n) { (void)take(n); }

    /// Length prefix of a string or bytes field: -1 for null. Classic = int16 (strings) or
    /// int32 (bytes); compact = uvarint of length+1. Checked against the bytes left.
    std::int64_t string_length(bool compact) {
        std::int64_t n = compact ? static_cast<std::int64_t>(uvarint()) - 1 : i16();
        return checked_length(n);
    }
    std::int64_t bytes_length(bool compact) {
        std::int64_t n = compact ? static_cast<std::int64_t>(uvarint()) - 1 : i32();
        return checked_length(n);
    }
    /// Element count of an array: -1 for null. Checked against the bytes left, assuming each
    /// element takes at least `min_element_bytes`.
    std::int64_t array_length(bool compact, std::size_t min_element_bytes = 1) {
        std::int64_t n = compact ? static_cast<std::int64_t>(uvarint()) - 1 : i32();
        if (n < -1) {
            fail(errc::invalid_length);
            return -1;
        }
        if (n > 0 && static_cast<std::uint64_t>(n) * std::max<std::size_t>(min_element_bytes, 1) >
                         remaining()) {
            fail(errc::invalid_length);
            return -1;
        }
        return n;
    }

    std::string string(bool compact) {
        std::int64_t n = string_length(compact);
        if (n < 0) {
            if (ok()) {
                fail(errc::invalid_length);  // null where the field is not nullable
            }
            return {};
        }
        auto v = take(static_cast<std::size_t>(n));
        return std::string(as_chars(v));
    }
    std::optional<std::string> nullable_string(bool compact) {
        std::int64_t n = string_length(compact);
        if (n < 0) {
            return std::nullopt;
        }
        auto v = take(static_cast<std::size_t>(n));
        return std::string(as_chars(v));
    }

private:
    bool need(std::size_t n) {
        if (remaining() < n) {
            fail(errc::truncated);
            return false;
        }
        return true;
    }
    template <typename T>
    T fixed() {
        if (!need(sizeof(T))) {
            return T{};
        }
        T v = detail::load_be<T>(pos_);
        pos_ += sizeof(T);
        return v;
    }
    std::int64_t checked_length(std::int64_t n) {
        if (!ok()) {
            return -1;
        }
        if (n < -1) {
            fail(errc::invalid_length);
            return -1;
        }
        if (n > static_cast<std::int64_t>(remaining())) {
            fail(errc::truncated);
            return -1;
        }
        return n;
    }

    const std::byte* begin_;
    const std::byte* pos_;
    const std::byte* end_;
    std::shared_ptr<const void> owner_;
    std::error_code error_;
};

/// A chunk spliced into a writer's output: memory owned elsewhere, or a file region.
using external_chunk = std::variant<shared_bytes, file_region>;

/// Appends encoded fields to a buffer. Chunks added with external() are not copied: the
/// output is the buffer with those chunks spliced in at the points where they were added.
class writer {
public:
    writer() = default;
    explicit writer(std::size_t capacity) : buf_(capacity) {}

    void i8(std::int8_t v) { fixed(v); }
    void i16(std::int16_t v) { fixed(v); }
    void i32(std::int32_t v) { fixed(v); }
    void i64(std::int64_t v) { fixed(v); }
    void u16(std::uint16_t v) { fixed(v); }
    void u32(std::uint32_t v) { fixed(v); }
    void boolean(bool v) { fixed<std::uint8_t>(v ? 1 : 0); }
    void f64(double v) { fixed(std::bit_cast<std::uint64_t>(v)); }
    void write_uuid(const uuid& u) {
        std::memcpy(buf_.grow(16), u.bytes.data(), 16);
    }
    void uvarint(std::uint64_t v) {
        std::byte tmp[10];
        std::size_t n = put_uvarint(tmp, v);
        std::memcpy(buf_.grow(n), tmp, n);
    }
    void varint(std::int32_t v) { uvarint(zigzag32(v)); }
    void varlong(std::int64_t v) { uvarint(zigzag64(v)); }
    void raw(bytes_view b) { buf_.append(b); }

    /// Length prefixes; -1 writes null.
    void string_length(std::int64_t n, bool compact) {
        if (compact) {
            uvarint(static_cast<std::uint64_t>(n + 1));
        } else {
            i16(static_cast<std::int16_t>(n));
        }
    }
    void bytes_length(std::int64_t n, bool compact) {
        if (compact) {
            uvarint(static_cast<std::uint64_t>(n + 1));
        } else {
            i32(static_cast<std::int32_t>(n));
        }
    }
    void array_length(std::int64_t n, bool compact) { bytes_length(n, compact); }

    void string(std::string_view s, bool compact) {
        string_length(static_cast<std::int64_t>(s.size()), compact);
        raw(as_bytes(s));
    }
    void nullable_string(const std::optional<std::string>& s, bool compact) {
        if (!s) {
            string_length(-1, compact);
        } else {
            string(*s, compact);
        }
    }

    /// Splices bytes owned elsewhere into the output without copying. Small chunks are
    /// copied instead: a separate iovec costs more than copying a few hundred bytes.
    void external(external_chunk chunk) {
        if (auto* m = std::get_if<shared_bytes>(&chunk); m && m->data.size() <= copy_threshold) {
            raw(m->data);
            return;
        }
        external_size_ += std::visit(
            [](const auto& c) -> std::size_t {
                if constexpr (std::is_same_v<std::decay_t<decltype(c)>, shared_bytes>) {
                    return c.data.size();
                } else {
                    return c.length;
                }
            },
            chunk);
        splices_.push_back({buf_.size(), std::move(chunk)});
    }

    /// Reserves 4 bytes for an int32 written later with patch_i32 (e.g. a size prefix).
    std::size_t reserve_i32() {
        std::size_t at = buf_.size();
        buf_.grow(4);
        return at;
    }
    void patch_i32(std::size_t at, std::int32_t v) { store_i32(buf_.data() + at, v); }

    /// Total encoded size, external chunks included.
    std::size_t size() const { return buf_.size() + external_size_; }
    /// Size of the contiguous part only.
    std::size_t buffered_size() const { return buf_.size(); }
    byte_buffer& buffer() { return buf_; }
    const byte_buffer& buffer() const { return buf_; }

    struct splice {
        std::size_t at;  // position in buffer() before which the chunk goes
        external_chunk chunk;
    };
    const std::vector<splice>& splices() const { return splices_; }
    bool contiguous() const { return splices_.empty(); }

    /// The whole output in one buffer (copies external memory chunks; reads file regions with
    /// pread). For tests and for transports that cannot gather.
    byte_buffer flatten() const;

    static constexpr std::size_t copy_threshold = 512;

private:
    template <typename T>
    void fixed(T v) {
        detail::store_be(buf_.grow(sizeof(T)), v);
    }

    byte_buffer buf_;
    std::vector<splice> splices_;
    std::size_t external_size_ = 0;
};

}  // namespace sluice::protocol
