#include "protocol/kafka/compression.h"

#include <lz4.h>
#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <span>

#include "protocol/core/errc.h"

namespace sluice::protocol::kafka {
namespace {

// --- bounded output ----------------------------------------------------------------------

/// Hands out room at the end of `out` for a decoder, never more than max_output + 1 bytes past
/// where this call started: producing that one extra byte is how a bomb is detected.
class bounded_sink {
public:
    bounded_sink(byte_buffer& out, std::size_t max_output, std::size_t size_hint)
        : out_(out), start_(out.size()), max_(max_output),
          next_chunk_(std::clamp<std::size_t>(size_hint, 256, std::size_t{1} << 20)) {}

    /// Free bytes at the end of the buffer (empty when the limit has been passed).
    std::span<std::byte> room() {
        std::size_t produced = out_.size() - start_;
        if (produced > max_) {
            return {};
        }
        std::size_t allowed = max_ - produced;
        if (allowed < std::numeric_limits<std::size_t>::max()) {
            ++allowed;  // the one byte past the limit that reveals a bomb
        }
        std::size_t free = out_.capacity() - out_.size();
        if (free == 0) {
            std::size_t want = std::min(allowed, std::max(next_chunk_, produced));
            out_.reserve(out_.size() + want);
            next_chunk_ = std::min<std::size_t>(next_chunk_ * 2, std::size_t{16} << 20);
            free = out_.capacity() - out_.size();
        }
        return {out_.data() + out_.size(), std::min(free, allowed)};
    }
    /// Exactly `n` free bytes at the end of the buffer; the caller has checked `n` against the
    /// limit (used when the decoder states the output size up front).
    std::span<std::byte> room_for(std::size_t n) {
        out_.reserve(out_.size() + n);
        return {out_.data() + out_.size(), n};
    }
    void commit(std::size_t n) { out_.resize(out_.size() + n); }
    std::size_t produced() const { return out_.size() - start_; }
    bool over_limit() const { return produced() > max_; }
    /// Undoes everything this call appended (a failed decode leaves `out` as it was).
    void rollback() { out_.resize(start_); }

private:
    byte_buffer& out_;
    std::size_t start_;
    std::size_t max_;
    std::size_t next_chunk_;
};

result<void> failed(bounded_sink& sink, errc e) {
    sink.rollback();
    return fail(e);
}

const char* chars(const std::byte* p) { return reinterpret_cast<const char*>(p); }
char* chars(std::byte* p) { return reinterpret_cast<char*>(p); }

// --- gzip --------------------------------------------------------------------------------

result<void> gzip_compress(bytes_view input, byte_buffer& out, int level) {
    z_stream z{};
    // 15 window bits + 16: write a gzip wrapper rather than a zlib one.
    if (deflateInit2(&z, level == 0 ? Z_DEFAULT_COMPRESSION : level, Z_DEFLATED, 15 + 16, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
        return fail(errc::compression_error);
    }
    std::size_t start = out.size();
    std::size_t bound = deflateBound(&z, static_cast<uLong>(input.size())) + 32;
    out.reserve(start + bound);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(input.data()));
    z.avail_in = static_cast<uInt>(input.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data() + start);
    z.avail_out = static_cast<uInt>(bound);
    int rc = deflate(&z, Z_FINISH);
    std::size_t written = bound - z.avail_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        return fail(errc::compression_error);
    }
    out.resize(start + written);
    return {};
}

bool starts_gzip_member(const Bytef* p, uInt n) { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

result<void> gzip_decompress(bytes_view input, byte_buffer& out, std::size_t max_output) {
    if (input.empty()) {
        return fail(errc::compression_error);
    }
    bounded_sink sink(out, max_output, input.size() * 4);
    z_stream z{};
    // 15 window bits + 32: accept a gzip or a zlib wrapper.
    if (inflateInit2(&z, 15 + 32) != Z_OK) {
        return fail(errc::compression_error);
    }
    std::unique_ptr<z_stream, decltype(&inflateEnd)> guard(&z, &inflateEnd);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(input.data()));
    z.avail_in = static_cast<uInt>(input.size());
    for (;;) {
        auto room = sink.room();
        if (room.empty()) {
            return failed(sink, errc::too_large);
        }
        z.next_out = reinterpret_cast<Bytef*>(room.data());
        z.avail_out = static_cast<uInt>(room.size());
        int rc = inflate(&z, Z_NO_FLUSH);
        sink.commit(room.size() - z.avail_out);
        if (sink.over_limit()) {
            return failed(sink, errc::too_large);
        }
        if (rc == Z_STREAM_END) {
            // compat: Java's GZIPInputStream reads concatenated members and ignores trailing
            // bytes that do not start another member.
            if (!starts_gzip_member(z.next_in, z.avail_in)) {
                return {};
            }
            if (inflateReset(&z) != Z_OK) {
                return failed(sink, errc::compression_error);
            }
            continue;
        }
        if (rc == Z_OK && (z.avail_in > 0 || z.avail_out == 0)) {
            continue;
        }
        // Z_OK with input used up and room left, Z_BUF_ERROR: the stream is truncated.
        // Z_DATA_ERROR, Z_NEED_DICT, Z_MEM_ERROR: corrupt or unusable.
        return failed(sink, errc::compression_error);
    }
}

// --- snappy ------------------------------------------------------------------------------

constexpr std::array<unsigned char, 8> xerial_magic = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr std::size_t xerial_header_size = 16;
constexpr std::size_t xerial_block_size = 32 * 1024;

void snappy_raw_compress(bytes_view input, byte_buffer& out) {
    std::size_t start = out.size();
    out.reserve(start + snappy::MaxCompressedLength(input.size()));
    std::size_t written = 0;
    snappy::RawCompress(chars(input.data()), input.size(), chars(out.data() + start), &written);
    out.resize(start + written);
}

void snappy_xerial_compress(bytes_view input, byte_buffer& out) {
    std::byte* h = out.grow(xerial_header_size);
    std::memcpy(h, xerial_magic.data(), xerial_magic.size());
    store_i32(h + 8, 1);   // version
    store_i32(h + 12, 1);  // minimum compatible version
    for (std::size_t at = 0; at < input.size(); at += xerial_block_size) {
        auto block = input.subspan(at, std::min(xerial_block_size, input.size() - at));
        std::size_t length_at = out.size();
        out.grow(4);
        snappy_raw_compress(block, out);
        store_i32(out.data() + length_at, static_cast<std::int32_t>(out.size() - length_at - 4));
    }
}

/// One raw snappy block, appended within the sink's limit.
result<void> snappy_raw_block(bytes_view block, bounded_sink& sink, std::size_t max_output) {
    std::size_t length = 0;
    if (!snappy::GetUncompressedLength(chars(block.data()), block.size(), &length)) {
        return fail(errc::compression_error);
    }
    // The claimed length is checked before anything is allocated for it.
    if (length > max_output - std::min(max_output, sink.produced())) {
        return fail(errc::too_large);
    }
    if (length == 0) {
        return snappy::IsValidCompressedBuffer(chars(block.data()), block.size())
                   ? result<void>{}
                   : result<void>{fail(errc::compression_error)};
    }
    auto room = sink.room_for(length);
    if (!snappy::RawUncompress(chars(block.data()), block.size(), chars(room.data()))) {
        return fail(errc::compression_error);
    }
    sink.commit(length);
    return {};
}

result<void> snappy_decompress(bytes_view input, byte_buffer& out, std::size_t max_output) {
    if (input.empty()) {
        return fail(errc::compression_error);
    }
    bounded_sink sink(out, max_output, 0);
    if (!is_xerial_snappy(input)) {
        auto r = snappy_raw_block(input, sink, max_output);
        if (!r) {
            sink.rollback();
        }
        return r;
    }
    if (input.size() < xerial_header_size) {
        return fail(errc::compression_error);
    }
    // The version fields are not checked: every snappy-java version writes the same blocks.
    reader r(input.subspan(xerial_header_size));
    while (r.remaining() > 0) {
        std::int32_t length = r.i32();
        if (!r.ok() || length < 0 || static_cast<std::size_t>(length) > r.remaining()) {
            return failed(sink, errc::compression_error);
        }
        auto block = r.take(static_cast<std::size_t>(length));
        if (block.empty()) {
            continue;
        }
        auto d = snappy_raw_block(block, sink, max_output);
        if (!d) {
            sink.rollback();
            return d;
        }
    }
    return {};
}

// --- lz4 ---------------------------------------------------------------------------------

constexpr std::uint32_t lz4_frame_magic = 0x184D2204;

result<void> lz4_compress(bytes_view input, byte_buffer& out, int level) {
    LZ4F_preferences_t prefs{};
    // compat: Kafka's Java lz4 reader (KafkaLZ4BlockInputStream) decodes each block on its
    // own, so blocks must be independent; 64 KiB blocks, no content size, as it writes them.
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;
    prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
    prefs.compressionLevel = level;
    std::size_t start = out.size();
    std::size_t bound = LZ4F_compressFrameBound(input.size(), &prefs);
    out.reserve(start + bound);
    std::size_t n =
        LZ4F_compressFrame(out.data() + start, bound, input.data(), input.size(), &prefs);
    if (LZ4F_isError(n)) {
        return fail(errc::compression_error);
    }
    out.resize(start + n);
    return {};
}

struct lz4_dctx_deleter {
    void operator()(LZ4F_dctx* c) const { LZ4F_freeDecompressionContext(c); }
};

/// Runs the lz4 frame decoder over input[at..], which may hold several frames. `hint` is what
/// LZ4F_decompress last returned (0 = between frames, so the input may end there).
result<void> lz4_decode(LZ4F_dctx* ctx, bytes_view input, std::size_t at, std::size_t hint,
                        byte_buffer& out, std::size_t max_output) {
    bounded_sink sink(out, max_output, input.size() * 4);
    while (at < input.size() || hint != 0) {
        auto room = sink.room();
        if (room.empty()) {
            return failed(sink, errc::too_large);
        }
        std::size_t dst = room.size();
        std::size_t src = input.size() - at;
        hint = LZ4F_decompress(ctx, room.data(), &dst, input.data() + at, &src, nullptr);
        if (LZ4F_isError(hint)) {
            return failed(sink, errc::compression_error);
        }
        at += src;
        sink.commit(dst);
        if (sink.over_limit()) {
            return failed(sink, errc::too_large);
        }
        if (src == 0 && dst == 0) {
            return failed(sink, errc::compression_error);  // truncated frame: no progress
        }
    }
    return {};
}

std::unique_ptr<LZ4F_dctx, lz4_dctx_deleter> make_lz4_dctx() {
    LZ4F_dctx* raw = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) {
        return nullptr;
    }
    return std::unique_ptr<LZ4F_dctx, lz4_dctx_deleter>(raw);
}

result<void> lz4_decompress(bytes_view input, byte_buffer& out, std::size_t max_output) {
    if (input.empty()) {
        return fail(errc::compression_error);
    }
    auto ctx = make_lz4_dctx();
    if (!ctx) {
        return fail(errc::compression_error);
    }
    return lz4_decode(ctx.get(), input, 0, 1, out, max_output);
}

// xxHash32 (the lz4 frame header checksum), written from the xxHash specification. Only the
// legacy path needs it: liblz4 does not export its copy.
constexpr std::uint32_t xxh_p1 = 0x9E3779B1u;
constexpr std::uint32_t xxh_p2 = 0x85EBCA77u;
constexpr std::uint32_t xxh_p3 = 0xC2B2AE3Du;
constexpr std::uint32_t xxh_p4 = 0x27D4EB2Fu;
constexpr std::uint32_t xxh_p5 = 0x165667B1u;

std::uint32_t rotl32(std::uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }
std::uint32_t load_le32(const unsigned char* p) {
    return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
           std::uint32_t{p[3]} << 24;
}

std::uint32_t xxh32(const unsigned char* p, std::size_t n, std::uint32_t seed) {
    const unsigned char* end = p + n;
    std::uint32_t acc;
    if (n >= 16) {
        std::uint32_t v[4] = {seed + xxh_p1 + xxh_p2, seed + xxh_p2, seed, seed - xxh_p1};
        while (end - p >= 16) {
            for (auto& lane : v) {
                lane = rotl32(lane + load_le32(p) * xxh_p2, 13) * xxh_p1;
                p += 4;
            }
        }
        acc = rotl32(v[0], 1) + rotl32(v[1], 7) + rotl32(v[2], 12) + rotl32(v[3], 18);
    } else {
        acc = seed + xxh_p5;
    }
    acc += static_cast<std::uint32_t>(n);
    while (end - p >= 4) {
        acc = rotl32(acc + load_le32(p) * xxh_p3, 17) * xxh_p4;
        p += 4;
    }
    while (p < end) {
        acc = rotl32(acc + *p++ * xxh_p5, 11) * xxh_p1;
    }
    acc ^= acc >> 15;
    acc *= xxh_p2;
    acc ^= acc >> 13;
    acc *= xxh_p3;
    acc ^= acc >> 16;
    return acc;
}

// --- zstd --------------------------------------------------------------------------------

struct zstd_dctx_deleter {
    void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};
struct zstd_cctx_deleter {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

result<void> zstd_compress(bytes_view input, byte_buffer& out, int level) {
    thread_local std::unique_ptr<ZSTD_CCtx, zstd_cctx_deleter> ctx(ZSTD_createCCtx());
    if (!ctx) {
        return fail(errc::compression_error);
    }
    std::size_t start = out.size();
    std::size_t bound = ZSTD_compressBound(input.size());
    out.reserve(start + bound);
    std::size_t n = ZSTD_compressCCtx(ctx.get(), out.data() + start, bound, input.data(),
                                      input.size(), level == 0 ? 3 : level);
    if (ZSTD_isError(n)) {
        return fail(errc::compression_error);
    }
    out.resize(start + n);
    return {};
}

result<void> zstd_decompress(bytes_view input, byte_buffer& out, std::size_t max_output) {
    if (input.empty()) {
        return fail(errc::compression_error);
    }
    thread_local std::unique_ptr<ZSTD_DCtx, zstd_dctx_deleter> ctx(ZSTD_createDCtx());
    if (!ctx) {
        return fail(errc::compression_error);
    }
    ZSTD_DCtx_reset(ctx.get(), ZSTD_reset_session_only);
    // The frame's content size, when it states one, is only a hint: the output is still bounded.
    unsigned long long declared = ZSTD_getFrameContentSize(input.data(), input.size());
    std::size_t hint = input.size() * 4;
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR) {
        if (declared > max_output) {
            return fail(errc::too_large);
        }
        hint = static_cast<std::size_t>(declared) + 1;
    }
    bounded_sink sink(out, max_output, hint);
    ZSTD_inBuffer in{input.data(), input.size(), 0};
    std::size_t pending = 1;  // 0 once a frame is complete and flushed
    while (in.pos < in.size || pending != 0) {
        auto room = sink.room();
        if (room.empty()) {
            return failed(sink, errc::too_large);
        }
        ZSTD_outBuffer o{room.data(), room.size(), 0};
        std::size_t before = in.pos;
        pending = ZSTD_decompressStream(ctx.get(), &o, &in);
        if (ZSTD_isError(pending)) {
            return failed(sink, errc::compression_error);
        }
        sink.commit(o.pos);
        if (sink.over_limit()) {
            return failed(sink, errc::too_large);
        }
        if (o.pos == 0 && in.pos == before) {
            return failed(sink, errc::compression_error);  // truncated frame: no progress
        }
    }
    return {};
}

}  // namespace

bool is_xerial_snappy(bytes_view data) {
    return data.size() >= xerial_magic.size() &&
           std::memcmp(data.data(), xerial_magic.data(), xerial_magic.size()) == 0;
}

result<void> compress(compression codec, bytes_view input, byte_buffer& out,
                      const compress_options& options) {
    switch (codec) {
        case compression::none: out.append(input); return {};
        case compression::gzip: return gzip_compress(input, out, options.level);
        case compression::snappy:
            if (options.snappy == snappy_framing::xerial) {
                snappy_xerial_compress(input, out);
            } else {
                snappy_raw_compress(input, out);
            }
            return {};
        case compression::lz4: return lz4_compress(input, out, options.level);
        case compression::zstd: return zstd_compress(input, out, options.level);
    }
    return fail(errc::unsupported_compression);
}

result<void> decompress(compression codec, bytes_view input, byte_buffer& out,
                        std::size_t max_output) {
    switch (codec) {
        case compression::none:
            if (input.size() > max_output) {
                return fail(errc::too_large);
            }
            out.append(input);
            return {};
        case compression::gzip: return gzip_decompress(input, out, max_output);
        case compression::snappy: return snappy_decompress(input, out, max_output);
        case compression::lz4: return lz4_decompress(input, out, max_output);
        case compression::zstd: return zstd_decompress(input, out, max_output);
    }
    return fail(errc::unsupported_compression);
}

result<void> decompress_lz4_ignoring_header_checksum(bytes_view input, byte_buffer& out,
                                                     std::size_t max_output) {
    // Frame header: magic (4, little-endian), FLG, BD, [content size (8) if FLG bit 3],
    // [dictionary id (4) if FLG bit 0], HC = second byte of xxh32(FLG .. last optional field).
    if (input.size() < 7 ||
        load_le32(reinterpret_cast<const unsigned char*>(input.data())) != lz4_frame_magic) {
        return lz4_decompress(input, out, max_output);
    }
    auto flg = static_cast<std::uint8_t>(input[4]);
    std::size_t descriptor = 2 + ((flg & 0x08) ? 8 : 0) + ((flg & 0x01) ? 4 : 0);
    if (input.size() < 4 + descriptor + 1) {
        return fail(errc::compression_error);
    }
    std::array<std::byte, 4 + 14 + 1> header{};
    std::memcpy(header.data(), input.data(), 4 + descriptor);
    auto hc = xxh32(reinterpret_cast<const unsigned char*>(header.data() + 4), descriptor, 0);
    header[4 + descriptor] = static_cast<std::byte>((hc >> 8) & 0xff);

    auto ctx = make_lz4_dctx();
    if (!ctx) {
        return fail(errc::compression_error);
    }
    // Feed the patched header first: it yields no output, only decoder state. The blocks are
    // then read from the input in place.
    std::size_t header_size = 4 + descriptor + 1;
    std::size_t dst = 0;
    std::size_t src = header_size;
    std::size_t hint = LZ4F_decompress(ctx.get(), nullptr, &dst, header.data(), &src, nullptr);
    if (LZ4F_isError(hint) || src != header_size) {
        return fail(errc::compression_error);
    }
    return lz4_decode(ctx.get(), input, header_size, hint, out, max_output);
}

}  // namespace sluice::protocol::kafka
