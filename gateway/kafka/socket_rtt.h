#pragma once

#include <cstdint>
#include <optional>

namespace sluice::gateway {

/// The smallest round-trip time the kernel has seen on a connected TCP socket (the path's
/// propagation delay, without the queueing a busy receiver adds), in microseconds; nullopt when
/// the socket cannot tell.
std::optional<std::uint32_t> tcp_min_rtt_us(int fd);

}  // namespace sluice::gateway
