// Fuzzes everything that reads record data from the network or the disk: v2 batch validation
// and record iteration (with bounded decompression), legacy message sets, and the conversions
// both ways. Any input must fail cleanly or decode; what decodes must survive a rebuild.
//
// The first byte picks a mode, the rest is the input:
//   0: the input as a v2 batch, exactly as given (the CRC check guards the records);
//   1: the same with the CRC fixed first, so the fuzzer reaches the record decoder; records
//      that decode are rebuilt and must decode to the same fields, and the batch is
//      down-converted to magic 0 and 1, which must decode again;
//   2: the input as a legacy message set with each top-level CRC fixed; what decodes is
//      converted to a v2 batch, which must validate and iterate;
//   3: the input as raw compressed data for each codec, and for the lz4 legacy decoder.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "protocol/kafka/compression.h"
#include "protocol/kafka/legacy_message.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch.h"
#include "protocol/kafka/record_batch_builder.h"

using namespace sluice::protocol;
using namespace sluice::protocol::kafka;

namespace {

// Small enough that bombs are cheap to detect, big enough for real batches.
constexpr std::size_t max_decompressed = 4 << 20;

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

bool same(const std::optional<bytes_view>& a, const std::optional<bytes_view>& b) {
    if (a.has_value() != b.has_value()) {
        return false;
    }
    return !a || std::equal(a->begin(), a->end(), b->begin(), b->end());
}

void iterate_all(bytes_view batch) {
    auto it = record_iterator::open(batch, max_decompressed);
    if (!it) {
        return;
    }
    record_view rec;
    while (it->next(rec)) {
        for (const auto& h : rec.headers) {
            (void)h;
        }
    }
}

void batch_as_given(bytes_view data) {
    if (validate_batch(data)) {
        iterate_all(data);
    }
    (void)summarize_records(data, max_decompressed);
    batch_cursor cursor(data);
    for (auto b = cursor.next(); !b.empty(); b = cursor.next()) {
        (void)validate_batch(b);
    }
}

void batch_with_fixed_crc(bytes_view input) {
    std::vector<std::byte> data(input.begin(), input.end());
    if (data.size() >= batch_header_size) {
        store_u32(data.data() + batch_crc_offset, compute_batch_crc(data));
    }
    auto decoded = decode_batch(data, max_decompressed);
    if (!decoded) {
        return;
    }
    // Rebuild the records; the new batch must decode to the same fields.
    batch_options o;
    o.base_offset = decoded->header.base_offset;
    o.codec = decoded->header.codec();
    record_batch_builder b(o);
    std::vector<std::vector<header_view>> headers;
    for (const auto& r : decoded->records) {
        headers.emplace_back(r.headers.begin(), r.headers.end());
        b.add(r.key, r.value, r.timestamp, headers.back());
    }
    auto rebuilt = b.finish();
    check(rebuilt.has_value());
    auto again = decode_batch(rebuilt->view(), max_decompressed + 1024);
    check(again.has_value());
    check(again->records.size() == decoded->records.size());
    for (std::size_t i = 0; i < again->records.size(); ++i) {
        const auto& x = decoded->records[i];
        const auto& y = again->records[i];
        check(same(x.key, y.key) && same(x.value, y.value));
        check(x.headers.size() == y.headers.size());
        if (!decoded->header.uses_log_append_time()) {
            check(x.timestamp == y.timestamp);
        }
    }
    for (std::int8_t magic : {std::int8_t{0}, std::int8_t{1}}) {
        // No fetch offset: fuzzed offset deltas may make record offsets negative.
        auto legacy = convert_batches_to_legacy(data, magic, max_decompressed,
                                                std::numeric_limits<std::int64_t>::min());
        if (!legacy) {
            continue;
        }
        auto set = decode_legacy_messages(legacy->view());
        check(set.has_value());
        if (!decoded->header.is_control()) {
            check(set->messages.size() == decoded->records.size());
        }
    }
}

void legacy_with_fixed_crcs(bytes_view input) {
    std::vector<std::byte> data(input.begin(), input.end());
    std::size_t pos = 0;
    while (pos + legacy_log_overhead + 4 <= data.size()) {
        std::int32_t size = load_i32(data.data() + pos + 8);
        if (size < 4 || static_cast<std::size_t>(size) > data.size() - pos - legacy_log_overhead) {
            break;
        }
        std::byte* covered = data.data() + pos + 16;
        std::size_t n = static_cast<std::size_t>(size) - 4;
        store_u32(data.data() + pos + 12,
                  static_cast<std::uint32_t>(
                      crc32(0, reinterpret_cast<const Bytef*>(covered), static_cast<uInt>(n))));
        pos += legacy_log_overhead + static_cast<std::size_t>(size);
    }
    for (bool tail : {false, true}) {
        legacy_decode_options o;
        o.max_decompressed = max_decompressed;
        o.allow_truncated_tail = tail;
        (void)decode_legacy_messages(data, o);
    }
    legacy_to_batch_options c;
    c.max_decompressed = max_decompressed;
    auto batch = convert_legacy_to_batch(data, c);
    if (!batch) {
        return;
    }
    check(validate_batch(batch->view()).has_value());
    check(decode_batch(batch->view(), max_decompressed * 2).has_value());
}

void raw_compressed(bytes_view data) {
    for (auto codec :
         {compression::gzip, compression::snappy, compression::lz4, compression::zstd}) {
        byte_buffer out;
        auto r = decompress(codec, data, out, max_decompressed);
        check(r.has_value() ? out.size() <= max_decompressed : out.size() == 0);
    }
    byte_buffer out;
    (void)decompress_lz4_ignoring_header_checksum(data, out, max_decompressed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    bytes_view input(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
    switch (data[0] % 4) {
        case 0: batch_as_given(input); break;
        case 1: batch_with_fixed_crc(input); break;
        case 2: legacy_with_fixed_crcs(input); break;
        case 3: raw_compressed(input); break;
    }
    return 0;
}
