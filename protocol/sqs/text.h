// The characters SQS carries in message bodies and String attributes (owned by protocol/sqs):
// UTF-8 of #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF, the characters XML 1.0
// allows, so that the Query protocol's XML can carry every message.
#pragma once

#include <string>
#include <string_view>

namespace sluice::protocol::sqs {

/// True when `text` is valid UTF-8 made only of the allowed characters.
bool allowed_text(std::string_view text);

/// `text` with every malformed UTF-8 sequence and disallowed character replaced by U+FFFD (for
/// records a Kafka producer wrote, whose bytes SQS could not carry as they are).
std::string sanitize_text(std::string_view text);

}  // namespace sluice::protocol::sqs
