#include "protocol/kafka/legacy_message.h"

#include <zlib.h>

#include <cstring>
#include <limits>

#include "protocol/core/assert.h"
#include "protocol/core/errc.h"
#include "protocol/core/wrapping.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch_builder.h"

namespace sluice::protocol::kafka {
namespace {

std::uint32_t crc32_ieee(bytes_view data) {
    // zlib's crc32 takes a uInt length; messages are below 2 GiB (int32 sizes).
    return static_cast<std::uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

/// An int32 length (-1 = null) and the bytes it covers.
std::optional<bytes_view> legacy_field(reader& r) {
    std::int32_t n = r.i32();
    if (!r.ok() || n == -1) {
        return std::nullopt;
    }
    if (n < -1) {
        r.fail(errc::invalid_length);
        return std::nullopt;
    }
    if (static_cast<std::size_t>(n) > r.remaining()) {
        r.fail(errc::truncated);
        return std::nullopt;
    }
    return r.take(static_cast<std::size_t>(n));
}

class set_decoder {
public:
    set_decoder(legacy_message_set& out, const legacy_decode_options& options)
        : out_(out), options_(options), budget_(options.max_decompressed) {}

    /// Decodes the outer message set.
    result<void> outer(bytes_view data) {
        std::size_t pos = 0;
        while (pos < data.size()) {
            bytes_view rest = data.subspan(pos);
            std::size_t total = 0;
            auto status = frame(rest, total);
            if (status == frame_status::partial) {
                if (!options_.allow_truncated_tail) {
                    return fail(errc::truncated);
                }
                out_.truncated_tail = true;
                return {};
            }
            if (status == frame_status::bad_length) {
                return fail(errc::invalid_length);
            }
            legacy_message m;
            auto r = parse(rest.first(total), m);
            if (!r) {
                return r;
            }
            pos += total;
            if (m.codec() == compression::none) {
                note_magic(m.magic);
                out_.messages.push_back(m);
                continue;
            }
            auto w = expand(m);
            if (!w) {
                return w;
            }
        }
        return {};
    }

private:
    enum class frame_status { ok, partial, bad_length };

    /// Finds the extent of the message at the start of `data`.
    static frame_status frame(bytes_view data, std::size_t& total) {
        if (data.size() < legacy_log_overhead) {
            return frame_status::partial;
        }
        std::int32_t size = load_i32(data.data() + 8);
        if (size < static_cast<std::int32_t>(legacy_min_message_size_v0)) {
            return frame_status::bad_length;
        }
        total = legacy_log_overhead + static_cast<std::size_t>(size);
        return total > data.size() ? frame_status::partial : frame_status::ok;
    }

    /// Parses one complete message (offset through value) and checks its CRC.
    static result<void> parse(bytes_view msg, legacy_message& m) {
        reader r(msg);
        m.offset = r.i64();
        r.skip(4);  // message_size, already used by frame()
        std::uint32_t crc = r.u32();
        bytes_view covered = r.rest();
        m.magic = r.i8();
        if (m.magic != 0 && m.magic != 1) {
            return fail(errc::invalid_value);
        }
        if (m.magic == 1 && msg.size() - legacy_log_overhead < legacy_min_message_size_v1) {
            return fail(errc::invalid_length);
        }
        if (crc32_ieee(covered) != crc) {
            return fail(errc::crc_mismatch);
        }
        m.attributes = r.i8();
        m.timestamp = m.magic == 1 ? r.i64() : -1;
        m.key = legacy_field(r);
        m.value = legacy_field(r);
        if (!r.ok()) {
            return fail(r.error());
        }
        if (r.remaining() != 0) {
            return fail(errc::invalid_length);  // message_size disagrees with the fields
        }
        return {};
    }

    /// Decompresses a wrapper and appends its inner messages with offsets resolved.
    result<void> expand(const legacy_message& wrapper) {
        compression codec = wrapper.codec();
        if (codec > compression::lz4) {
            return fail(errc::unsupported_compression);  // zstd needs magic 2
        }
        if (!wrapper.value) {
            return fail(errc::invalid_value);
        }
        byte_buffer inner_bytes;
        result<void> d =
            (codec == compression::lz4 && wrapper.magic == 0)
                ? decompress_lz4_ignoring_header_checksum(*wrapper.value, inner_bytes, budget_)
                : decompress(codec, *wrapper.value, inner_bytes, budget_);
        if (!d) {
            return d;
        }
        budget_ -= inner_bytes.size();

        std::size_t first = out_.messages.size();
        bytes_view inner = inner_bytes.view();
        std::size_t pos = 0;
        while (pos < inner.size()) {
            bytes_view rest = inner.subspan(pos);
            std::size_t total = 0;
            auto status = frame(rest, total);
            if (status != frame_status::ok) {
                return fail(status == frame_status::partial ? errc::truncated
                                                            : errc::invalid_length);
            }
            legacy_message m;
            auto r = parse(rest.first(total), m);
            if (!r) {
                return r;
            }
            if (m.codec() != compression::none || m.magic != wrapper.magic) {
                return fail(errc::invalid_value);  // nested wrappers, mixed magic
            }
            pos += total;
            out_.messages.push_back(m);
        }
        if (out_.messages.size() == first) {
            return fail(errc::invalid_value);  // a wrapper with no inner messages
        }
        if (wrapper.magic == 1) {
            std::int64_t last_relative = out_.messages.back().offset;
            for (std::size_t i = first; i < out_.messages.size(); ++i) {
                auto& m = out_.messages[i];
                m.offset = wrapping_add(wrapping_sub(wrapper.offset, last_relative), m.offset);
                if (wrapper.log_append_time()) {
                    m.timestamp = wrapper.timestamp;
                    m.attributes =
                        static_cast<std::int8_t>(m.attributes | legacy_attr_timestamp_type);
                }
            }
        }
        if (out_.codec == compression::none) {
            out_.codec = codec;
        }
        note_magic(wrapper.magic);
        out_.storage.push_back(std::move(inner_bytes));  // the views move with its heap block
        return {};
    }

    void note_magic(std::int8_t magic) {
        if (magic > out_.max_magic) {
            out_.max_magic = magic;
        }
    }

    legacy_message_set& out_;
    const legacy_decode_options& options_;
    std::size_t budget_;
};

void store_field(std::byte*& p, const std::optional<bytes_view>& f) {
    if (!f) {
        store_i32(p, -1);
        p += 4;
        return;
    }
    store_i32(p, static_cast<std::int32_t>(f->size()));
    p += 4;
    if (!f->empty()) {
        std::memcpy(p, f->data(), f->size());
        p += f->size();
    }
}

}  // namespace

result<legacy_message_set> decode_legacy_messages(bytes_view data,
                                                  const legacy_decode_options& options) {
    legacy_message_set out;
    set_decoder d(out, options);
    auto r = d.outer(data);
    if (!r) {
        return fail(r.error());
    }
    return out;
}

std::size_t legacy_message_size(std::int8_t magic, const std::optional<bytes_view>& key,
                                const std::optional<bytes_view>& value) {
    return legacy_log_overhead +
           (magic >= 1 ? legacy_min_message_size_v1 : legacy_min_message_size_v0) +
           (key ? key->size() : 0) + (value ? value->size() : 0);
}

void append_legacy_message(byte_buffer& out, const legacy_message& m) {
    std::size_t total = legacy_message_size(m.magic, m.key, m.value);
    std::byte* start = out.grow(total);
    std::byte* p = start;
    store_i64(p, m.offset);
    store_i32(p + 8, static_cast<std::int32_t>(total - legacy_log_overhead));
    p += 16;  // the CRC goes in once the rest is written
    *p++ = static_cast<std::byte>(m.magic);
    *p++ = static_cast<std::byte>(m.attributes);
    if (m.magic >= 1) {
        store_i64(p, m.timestamp);
        p += 8;
    }
    store_field(p, m.key);
    store_field(p, m.value);
    SLUICE_ASSERT(p == start + total);
    store_u32(start + 12, crc32_ieee(bytes_view(start + 16, total - 16)));
}

result<byte_buffer> convert_legacy_to_batch(bytes_view message_set,
                                            const legacy_to_batch_options& options) {
    legacy_decode_options d;
    d.max_decompressed = options.max_decompressed;
    auto set = decode_legacy_messages(message_set, d);
    if (!set) {
        return fail(set.error());
    }
    if (set->messages.empty()) {
        return fail(errc::invalid_value);
    }
    batch_options b;
    b.codec = options.codec.value_or(set->codec);
    b.compression_options = options.compression_options;
    record_batch_builder builder(b);
    builder.reserve(message_set.size());
    for (const auto& m : set->messages) {
        builder.add(m.key, m.value, m.magic >= 1 ? m.timestamp : -1);
    }
    return builder.finish();
}

std::int8_t legacy_magic_for_fetch(std::int16_t fetch_version) {
    if (fetch_version <= 1) {
        return 0;
    }
    return fetch_version <= 3 ? 1 : current_magic;
}

result<byte_buffer> convert_batches_to_legacy(bytes_view batches, std::int8_t magic,
                                              std::size_t max_decompressed,
                                              std::int64_t first_offset) {
    if (magic != 0 && magic != 1) {
        return fail(errc::invalid_value);
    }
    byte_buffer out;
    out.reserve(batches.size());
    batch_cursor cursor(batches);
    for (bytes_view batch = cursor.next(); !batch.empty(); batch = cursor.next()) {
        int batch_magic = magic_of(batch);
        if (batch_magic == 0 || batch_magic == 1) {
            legacy_decode_options d;
            d.max_decompressed = max_decompressed;
            auto set = decode_legacy_messages(batch, d);
            if (!set) {
                return fail(set.error());
            }
            for (auto m : set->messages) {
                if (m.offset < first_offset) {
                    continue;
                }
                m.magic = magic;
                m.attributes = static_cast<std::int8_t>(
                    magic == 1 && m.log_append_time() ? legacy_attr_timestamp_type : 0);
                append_legacy_message(out, m);
            }
            continue;
        }
        auto it = record_iterator::open(batch, max_decompressed);
        if (!it) {
            return fail(it.error());
        }
        if (it->header().is_control()) {
            continue;  // old consumers do not know transaction markers
        }
        bool append_time = it->header().uses_log_append_time();
        record_view rec;
        while (it->next(rec)) {
            if (rec.offset < first_offset) {
                continue;
            }
            legacy_message m;
            m.offset = rec.offset;
            m.magic = magic;
            m.attributes = static_cast<std::int8_t>(
                magic == 1 && append_time ? legacy_attr_timestamp_type : 0);
            m.timestamp = rec.timestamp;
            m.key = rec.key;
            m.value = rec.value;
            append_legacy_message(out, m);
        }
        if (it->error()) {
            return fail(it->error());
        }
    }
    if (cursor.malformed()) {
        return fail(errc::invalid_length);
    }
    return out;
}

}  // namespace sluice::protocol::kafka
