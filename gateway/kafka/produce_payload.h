// The record bytes of one partition of a Produce request, as v2 batches the log can append.
// Magic 2 batches are used in place (the request frame is private to the request, so the log
// may rewrite base offsets in it); legacy message sets (magic 0/1, sent by old clients with
// Produce v0-2) are converted to one v2 batch first.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"
#include "protocol/kafka/codec.h"

namespace sluice::gateway {

class produce_payload {
public:
    /// Checks the payload's format and converts legacy message sets. Errors are protocol errc
    /// values (mapped to CORRUPT_MESSAGE and friends).
    static result<produce_payload> from(const protocol::kafka::records& records,
                                        std::int16_t produce_version);

    std::span<std::byte> mutable_batches() { return bytes_; }

private:
    std::span<std::byte> bytes_;
    std::shared_ptr<const void> owner_;  // the frame, or the converted buffer
};

}  // namespace sluice::gateway
