#include "backend/api/records_memory.h"

#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace sluice::backend::api {

result<protocol::byte_buffer> read_records_into_memory(const protocol::kafka::records& recs) {
    protocol::byte_buffer out(recs.size());
    for (const auto& chunk : recs.chunks()) {
        if (const auto* m = std::get_if<protocol::shared_bytes>(&chunk)) {
            out.append(m->data);
            continue;
        }
        const auto& region = std::get<protocol::file_region>(chunk);
        std::byte* dst = out.grow(region.length);
        std::size_t done = 0;
        while (done < region.length) {
            ssize_t n = ::pread(region.fd, dst + done, region.length - done,
                                static_cast<off_t>(region.position + done));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return fail(std::error_code(n < 0 ? errno : EIO, std::generic_category()));
            }
            done += static_cast<std::size_t>(n);
        }
    }
    return out;
}

}  // namespace sluice::backend::api
