// Receipt handles and message ids of the queue service (owned by backend/queue).
//
// A receipt handle names one receive of one message: the queue incarnation, the message's
// partition and offset, and the receive count it was handed out with. It is opaque and
// unforgeable: URL-safe base64 (66 characters) of
//   u8 version = 1, 16 bytes queue_id, int32 partition, int64 offset, int32 receive_count,
//   16 bytes HMAC-SHA256(key, the 33 bytes before) truncated
// with a random 32-byte key the service creates once and keeps in its state log. A handle of
// another queue, an edited one, or one signed with another key does not verify.
//
// A message id is derived from the queue incarnation and the message's place, so that every
// reader (and a redelivery after a restart) names a message the same way: UUID-shaped,
// "qqqqqqqq-pppp-oooo-oooo-oooooooooooo" in hex (the first 4 bytes of the queue id, the
// partition, the 64-bit offset).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/core/uuid.h"

namespace sluice::backend::queue {

struct receipt {
    uuid queue_id;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::int32_t receive_count = 0;
    bool operator==(const receipt&) const = default;
};

/// Issues and checks receipt handles with one key. Immutable after construction: thread-safe.
/// The HMAC's inner and outer hash states are keyed once here, so that a handle costs two
/// short SHA-256 computations (every received and every deleted message needs one).
class receipt_signer {
public:
    static constexpr std::size_t key_bytes = 32;

    explicit receipt_signer(std::string key);
    ~receipt_signer();
    receipt_signer(const receipt_signer&) = delete;
    receipt_signer& operator=(const receipt_signer&) = delete;

    /// A new random key (from the operating system's generator).
    static std::string random_key();

    std::string issue(const receipt& r) const;
    /// The receipt a handle names, or nullopt when it is not an authentic handle.
    std::optional<receipt> verify(std::string_view handle) const;

private:
    struct keyed;

    std::array<std::uint8_t, 32> mac(const std::uint8_t* data, std::size_t n) const;

    std::unique_ptr<const keyed> keyed_;
};

std::string message_id(const uuid& queue_id, std::int32_t partition, std::int64_t offset);
/// FIFO sequence numbers: increasing within a partition (so within a message group), as a
/// 20-digit decimal number (SQS's are 20 digits too).
std::string sequence_number(std::int32_t partition, std::int64_t offset);

}  // namespace sluice::backend::queue
