// Base64 (RFC 4648, standard alphabet) for the HTTP front: binary keys, values and headers in
// REST and WebSocket messages (owned by gateway/http). Stateless; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sluice::gateway {

/// Appends the padded base64 of `bytes` to `out`.
void base64_encode(std::string_view bytes, std::string& out);
inline std::string base64_encode(std::string_view bytes) {
    std::string out;
    base64_encode(bytes, out);
    return out;
}

/// Decodes padded or unpadded base64; nullopt for a character outside the alphabet, padding
/// in the wrong place or a length no encoding has. Whitespace is not allowed.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace sluice::gateway
