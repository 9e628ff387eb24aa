#include "protocol/core/bytes.h"

#include "protocol/core/assert.h"

namespace sluice::protocol {

byte_buffer writer::flatten() const {
    byte_buffer out(size());
    std::size_t from = 0;
    for (const auto& s : splices_) {
        out.append(bytes_view(buf_.data() + from, s.at - from));
        from = s.at;
        const auto* m = std::get_if<shared_bytes>(&s.chunk);
        // File regions are the gateway's to read; the protocol module does no file I/O.
        SLUICE_CHECK(m != nullptr);
        out.append(m->data);
    }
    out.append(bytes_view(buf_.data() + from, buf_.size() - from));
    return out;
}

}  // namespace sluice::protocol
