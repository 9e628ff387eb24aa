// The digests SQS answers with (owned by gateway/sqs), which clients check: MD5OfMessageBody
// (the body's bytes), and MD5OfMessageAttributes / MD5OfMessageSystemAttributes as the SQS
// Developer Guide defines them: attributes sorted by name; for each, the name and the data type
// each as a 4-byte big-endian length and the UTF-8 bytes, one transport byte (1 for String and
// Number types, 2 for Binary types, custom labels included in the type), and the value as a
// 4-byte length and its bytes. Lowercase hex.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backend/api/queues.h"

namespace sluice::gateway::sqs {

std::string md5_hex(std::string_view data);
std::string md5_of_attributes(const std::vector<backend::api::message_attribute>& attributes);

/// Binary (transport 2) when the data type is Binary or Binary.<label>.
bool is_binary_type(std::string_view data_type);

}  // namespace sluice::gateway::sqs
