#include "gateway/kafka/produce_payload.h"

#include "protocol/core/errc.h"
#include "protocol/kafka/legacy_message.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

result<produce_payload> produce_payload::from(const kafka::records& records,
                                              std::int16_t produce_version) {
    (void)produce_version;
    const protocol::shared_bytes* chunk = records.single_memory_chunk();
    if (records.is_null() || chunk == nullptr || chunk->data.empty()) {
        return fail(protocol::errc::invalid_length);
    }
    produce_payload p;
    const int magic = kafka::magic_of(chunk->data);
    if (magic == kafka::current_magic) {
        // The request frame is a private buffer owned by this request (see the dispatcher):
        // writing into it is safe and saves a copy of every produced byte.
        p.owner_ = chunk->owner;
        p.bytes_ = std::span<std::byte>(const_cast<std::byte*>(chunk->data.data()),
                                        chunk->data.size());
        return p;
    }
    if (magic == 0 || magic == 1) {
        // compat: Produce v0-2 (and some old clients at any version) carry magic 0/1 message
        // sets; the log stores only v2 batches, so convert (Kafka's LogValidator does too).
        auto converted = kafka::convert_legacy_to_batch(chunk->data);
        if (!converted) {
            return fail(converted.error());
        }
        auto owned = std::make_shared<protocol::byte_buffer>(std::move(*converted));
        p.bytes_ = owned->mutable_view();
        p.owner_ = std::move(owned);
        return p;
    }
    return fail(protocol::errc::invalid_value);
}

}  // namespace sluice::gateway
