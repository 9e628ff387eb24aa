// Building blocks the generated Kafka message code uses: the bytes and records field types,
// unknown tagged fields, and the read/write/print helpers for them.
//
// Owned by the protocol module; the generated structs (protocol/kafka/messages/*.h in the
// build directory) include this header and nothing else of ours.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "protocol/core/bytes.h"
#include "protocol/core/ids.h"
#include "protocol/core/result.h"
#include "protocol/core/uuid.h"
#include "protocol/kafka/error_code.h"

namespace sluice::protocol::kafka {

/// An opaque byte string field (group metadata, SASL tokens, assignments).
using bytes = std::vector<std::byte>;

/// The records field of Produce and Fetch: record batches that the codec never copies when
/// it can help it. Decoded from a frame, it is a view into the frame (kept alive by the
/// frame's owner). Built for a response, it is a list of chunks (memory or file regions) that
/// the writer splices into the output. A default-constructed records is null.
class records {
public:
    records() = default;
    /// Non-null, empty.
    static records empty() {
        records r;
        r.null_ = false;
        return r;
    }
    /// Non-null records made of one chunk.
    explicit records(external_chunk chunk) : null_(false) { append(std::move(chunk)); }
    /// Non-null records holding a private copy of `data`.
    static records copy_of(bytes_view data);

    bool is_null() const { return null_; }
    std::size_t size() const { return size_; }
    const std::vector<external_chunk>& chunks() const { return chunks_; }

    void append(external_chunk chunk);
    /// The bytes when they are one memory chunk (always true for decoded records); else empty.
    bytes_view contiguous() const;
    /// The memory chunk's owner and view (decoded records); null owner when not contiguous.
    const shared_bytes* single_memory_chunk() const;

    /// Compares the bytes of memory chunks; file regions compare by identity.
    bool operator==(const records& other) const;

private:
    bool null_ = true;
    std::size_t size_ = 0;
    std::vector<external_chunk> chunks_;
};

/// A tagged field this codec does not know, kept so that re-encoding reproduces the input.
struct tagged_field {
    std::uint32_t tag = 0;
    bytes data;
    bool operator==(const tagged_field&) const = default;
};
using tagged_fields = std::vector<tagged_field>;

namespace codec {

// --- reading -------------------------------------------------------------------------------

inline void read_bytes(reader& r, bool flex, bytes& out) {
    std::int64_t n = r.bytes_length(flex);
    if (n < 0) {
        if (r.ok()) {
            r.fail(errc::invalid_length);
        }
        return;
    }
    auto v = r.take(static_cast<std::size_t>(n));
    out.assign(v.begin(), v.end());
}

inline void read_nullable_bytes(reader& r, bool flex, std::optional<bytes>& out) {
    std::int64_t n = r.bytes_length(flex);
    if (n < 0) {
        out.reset();
        return;
    }
    auto v = r.take(static_cast<std::size_t>(n));
    out.emplace(v.begin(), v.end());
}

void read_records(reader& r, bool flex, records& out);

/// Reads the tagged-field section's header: the number of fields, checked against the input.
inline std::uint32_t read_tag_count(reader& r) {
    std::uint32_t n = r.uvarint();
    if (n > r.remaining() / 2) {  // each tagged field takes at least two bytes
        r.fail(errc::invalid_length);
        return 0;
    }
    return n;
}

// --- writing -------------------------------------------------------------------------------

inline void write_bytes(writer& w, bool flex, const bytes& b) {
    w.bytes_length(static_cast<std::int64_t>(b.size()), flex);
    w.raw(bytes_view(b.data(), b.size()));
}

inline void write_nullable_bytes(writer& w, bool flex, const std::optional<bytes>& b) {
    if (!b) {
        w.bytes_length(-1, flex);
    } else {
        write_bytes(w, flex, *b);
    }
}

/// Writes `recs`; a null one is written as null only when `null_allowed` (the field is nullable
/// in this version), else as empty.
void write_records(writer& w, bool flex, const records& recs, bool null_allowed);

/// One entry of a tagged-field section being written: known fields encode into `data`.
struct pending_tag {
    std::uint32_t tag;
    byte_buffer data;
};

/// Writes a tagged-field section: the known fields (ascending tags) merged with unknown ones.
void write_tag_section(writer& w, std::vector<pending_tag>& known, const tagged_fields& unknown);

// --- printing ------------------------------------------------------------------------------

inline void print(std::ostream& os, bool v) { os << (v ? "true" : "false"); }
inline void print(std::ostream& os, std::int8_t v) { os << static_cast<int>(v); }
inline void print(std::ostream& os, std::int16_t v) { os << v; }
inline void print(std::ostream& os, std::uint16_t v) { os << v; }
inline void print(std::ostream& os, std::int32_t v) { os << v; }
inline void print(std::ostream& os, std::uint32_t v) { os << v; }
inline void print(std::ostream& os, std::int64_t v) { os << v; }
inline void print(std::ostream& os, double v) { os << v; }
inline void print(std::ostream& os, const std::string& v) { os << '"' << v << '"'; }
inline void print(std::ostream& os, const uuid& v) { os << v.to_string(); }
inline void print(std::ostream& os, const bytes& v) { os << "<" << v.size() << " bytes>"; }
inline void print(std::ostream& os, const records& v) {
    if (v.is_null()) {
        os << "null";
    } else {
        os << "<records " << v.size() << " bytes>";
    }
}
inline void print(std::ostream& os, std::chrono::milliseconds v) { os << v.count() << "ms"; }
inline void print(std::ostream& os, error_code v) { os << error_name(v); }
// Declared first so that each template finds the others whatever the nesting.
template <typename T, typename Tag>
void print(std::ostream& os, const strong<T, Tag>& v);
template <typename T>
    requires requires(std::ostream& os, const T& t) { t.print(os); }
void print(std::ostream& os, const T& v);
template <typename T>
void print(std::ostream& os, const std::optional<T>& v);
template <typename T>
void print(std::ostream& os, const std::vector<T>& v);

template <typename T, typename Tag>
void print(std::ostream& os, const strong<T, Tag>& v) {
    print(os, v.value);
}
inline void print(std::ostream& os, const offset& v) { os << v.value; }
template <typename T>
    requires requires(std::ostream& os, const T& t) { t.print(os); }
void print(std::ostream& os, const T& v) {
    v.print(os);
}
template <typename T>
void print(std::ostream& os, const std::optional<T>& v) {
    if (!v) {
        os << "null";
    } else {
        print(os, *v);
    }
}
template <typename T>
void print(std::ostream& os, const std::vector<T>& v) {
    os << '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0) {
            os << ", ";
        }
        print(os, v[i]);
    }
    os << ']';
}
inline void print(std::ostream& os, const tagged_fields& v) { os << "<" << v.size() << " unknown tags>"; }

}  // namespace codec
}  // namespace sluice::protocol::kafka
