// Compiled on its own (no precompiled Asio, no unity batch): <linux/tcp.h> has the kernel's
// struct tcp_info with tcpi_min_rtt, and it clashes with glibc's <netinet/tcp.h>.
#include "gateway/kafka/socket_rtt.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace sluice::gateway {

std::optional<std::uint32_t> tcp_min_rtt_us(int fd) {
    if (fd < 0) {
        return std::nullopt;
    }
    tcp_info info{};
    socklen_t len = sizeof(info);
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
        len < offsetof(tcp_info, tcpi_min_rtt) + sizeof(info.tcpi_min_rtt) || info.tcpi_min_rtt == 0) {
        return std::nullopt;
    }
    return info.tcpi_min_rtt;
}

}  // namespace sluice::gateway
