// Fuzzes the request path a connection runs on every frame: header, then the body of whatever
// API and version the header names. Any input must either fail cleanly or decode into a
// message that re-encodes and decodes to the same value (or, for a NaN float, the same bytes).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "protocol/kafka/all_messages.h"
#include "protocol/kafka/header.h"

using namespace sluice::protocol;
using namespace sluice::protocol::kafka;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    bytes_view frame(reinterpret_cast<const std::byte*>(data), size);
    reader r(frame);
    auto header = decode_request_header(r);
    if (!header) {
        return 0;
    }
    const std::int16_t version = header->api_version;
    const std::size_t body_at = r.position();
    with_message_types(header->api_key, [&]<typename Req, typename Resp>() {
        if (version < Req::min_version || version > Req::max_version) {
            return;
        }
        Req req;
        req.decode(r, version);
        if (!r.ok()) {
            return;
        }
        writer w;
        req.encode(w, version);
        auto bytes = w.flatten();
        reader again(bytes.view());
        Req back;
        back.decode(again, version);
        if (!again.ok()) {
            std::abort();  // what the codec wrote it must read back
        }
        if (!(back == req)) {
            // A float64 NaN (AlterClientQuotas' value) never equals itself, though its bits
            // survive: then the message must at least encode to the same bytes again.
            writer w2;
            back.encode(w2, version);
            const auto bytes2 = w2.flatten();
            const auto a = bytes.view();
            const auto b = bytes2.view();
            if (a.size() != b.size() || !std::equal(a.begin(), a.end(), b.begin())) {
                std::abort();  // a decoded message must survive its own round trip
            }
        }
        // Responses share the codec paths; decode the same bytes as one too.
        reader rr(frame.subspan(body_at));
        Resp resp;
        resp.decode(rr, version);
    });
    return 0;
}
