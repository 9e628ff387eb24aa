// The few cryptographic primitives the authenticators need (hashes, HMAC, PBKDF2, random bytes,
// constant-time comparison), as thin wrappers around OpenSSL 3's libcrypto. Byte strings travel
// as std::string (binary, not text). Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sluice::auth {

/// The hash functions SCRAM uses (RFC 5802's H and HMAC): SHA-256 (RFC 7677) and SHA-512.
enum class hash_algorithm { sha256, sha512 };

/// Output size in bytes: 32 or 64.
std::size_t digest_size(hash_algorithm h);

std::string hash(hash_algorithm h, std::string_view data);
std::string hmac(hash_algorithm h, std::string_view key, std::string_view data);
/// PBKDF2 with HMAC-h (RFC 5802's Hi), digest_size(h) bytes of output.
std::string pbkdf2(hash_algorithm h, std::string_view password, std::string_view salt,
                   int iterations);

/// `n` bytes from OpenSSL's CSPRNG; throws std::runtime_error if it cannot deliver.
std::string random_bytes(std::size_t n);

/// Equality whose running time depends on the lengths only, never on where the bytes differ.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace sluice::auth
