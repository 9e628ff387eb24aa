// Base64 (RFC 4648) in both alphabets: the standard one with padding, as SQS carries binary
// message attributes, and the URL-safe one without padding, for tokens that travel in URLs and
// form bodies (receipt handles, pagination tokens). Owned by the protocol module.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sluice::protocol {

enum class base64_alphabet {
    standard,  // A-Z a-z 0-9 + /, padded with '='
    url,       // A-Z a-z 0-9 - _, no padding
};

std::string base64_encode(std::string_view bytes, base64_alphabet alphabet = base64_alphabet::standard);

/// Decodes `text` in `alphabet`. The standard alphabet needs padding to a multiple of four
/// characters; the URL alphabet takes it with or without. Nullopt for any other character, a
/// misplaced '=', an impossible length, or non-zero bits after the last full byte.
std::optional<std::string> base64_decode(std::string_view text,
                                         base64_alphabet alphabet = base64_alphabet::standard);

}  // namespace sluice::protocol
