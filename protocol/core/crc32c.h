// CRC-32C (Castagnoli), the checksum of Kafka record batches. Uses the SSE4.2 crc32
// instruction when the CPU has it, and a slicing-by-8 table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace sluice::protocol {

/// Continues a CRC-32C over `data`; start with crc = 0.
std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

/// The portable table implementation, exposed so tests can compare both paths.
std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

/// True when crc32c() uses the hardware instruction on this machine.
bool crc32c_hardware_available() noexcept;

}  // namespace sluice::protocol
