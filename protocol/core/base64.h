// Base64 (RFC 4648) in both alphabets: the standard one with padding, as SQS carries binary
// message attributes and the REST Proxy and WebSocket APIs carry binary keys, values and
// headers, and the URL-safe one without padding, for tokens that travel in URLs and form bodies
// (receipt handles, pagination tokens). Owned by the protocol module. Stateless; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sluice::protocol {

enum class base64_alphabet {
    standard,  // A-Z a-z 0-9 + /, padded with '='
    url,       // A-Z a-z 0-9 - _, no padding
};

/// Whether decoding the standard alphabet insists on '=' padding (SQS does; the REST Proxy,
/// like Java's decoder, takes base64 without it). The URL alphabet takes either always.
enum class base64_padding { required, optional };

/// Appends the encoding of `bytes` to `out` (no allocation when `out` has the room).
void base64_encode(std::string_view bytes, std::string& out,
                   base64_alphabet alphabet = base64_alphabet::standard);
std::string base64_encode(std::string_view bytes, base64_alphabet alphabet = base64_alphabet::standard);

/// Decodes `text` in `alphabet`. Nullopt for any character outside the alphabet (whitespace
/// included), a misplaced '=', missing padding where it is required, an impossible length, or
/// non-zero bits after the last full byte.
std::optional<std::string> base64_decode(std::string_view text,
                                         base64_alphabet alphabet = base64_alphabet::standard,
                                         base64_padding padding = base64_padding::required);

}  // namespace sluice::protocol
