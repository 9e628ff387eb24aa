#include "protocol/core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace sluice::protocol {
namespace {

constexpr std::uint32_t poly = 0x82f63b78;  // reflected Castagnoli polynomial

constexpr std::array<std::array<std::uint32_t, 256>, 8> make_tables() {
    std::array<std::array<std::uint32_t, 256>, 8> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) {
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        }
        t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i) {
        for (std::size_t s = 1; s < 8; ++s) {
            t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
        }
    }
    return t;
}

constexpr auto tables = make_tables();

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(const unsigned char* p,
                                                              std::size_t n,
                                                              std::uint32_t crc) noexcept {
    std::uint64_t c = ~crc;
    while (n >= 8) {
        std::uint64_t v;
        std::memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
        p += 8;
        n -= 8;
    }
    auto c32 = static_cast<std::uint32_t>(c);
    while (n > 0) {
        c32 = _mm_crc32_u8(c32, *p++);
        --n;
    }
    return ~c32;
}

const bool have_sse42 = __builtin_cpu_supports("sse4.2");
#else
const bool have_sse42 = false;
#endif

}  // namespace

std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc) noexcept {
    auto p = reinterpret_cast<const unsigned char*>(data.data());
    std::size_t n = data.size();
    std::uint32_t c = ~crc;
    while (n >= 8) {
        std::uint32_t lo;
        std::uint32_t hi;
        std::memcpy(&lo, p, 4);
        std::memcpy(&hi, p + 4, 4);
        lo ^= c;  // little-endian host assumed (x86_64, aarch64)
        c = tables[7][lo & 0xff] ^ tables[6][(lo >> 8) & 0xff] ^ tables[5][(lo >> 16) & 0xff] ^
            tables[4][lo >> 24] ^ tables[3][hi & 0xff] ^ tables[2][(hi >> 8) & 0xff] ^
            tables[1][(hi >> 16) & 0xff] ^ tables[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n > 0) {
        c = (c >> 8) ^ tables[0][(c ^ *p++) & 0xff];
        --n;
    }
    return ~c;
}

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc) noexcept {
#if defined(__x86_64__)
    if (have_sse42) {
        return crc32c_sse42(reinterpret_cast<const unsigned char*>(data.data()), data.size(), crc);
    }
#endif
    return crc32c_portable(data, crc);
}

bool crc32c_hardware_available() noexcept { return have_sse42; }

}  // namespace sluice::protocol
