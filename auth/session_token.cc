#include "auth/session_token.h"

#include <charconv>

#include "auth/crypto.h"
#include "protocol/core/base64.h"

namespace sluice::auth {

namespace {

constexpr std::size_t key_bytes = 32;
/// A principal longer than this is not one sluice issues a token for (bounds the work a
/// forged token can cause).
constexpr std::size_t max_principal_bytes = 1024;

void fail(std::string* why, const char* reason) {
    if (why != nullptr) {
        *why = reason;
    }
}

}  // namespace

session_tokens::session_tokens(std::chrono::seconds lifetime)
    : key_(random_bytes(key_bytes)), lifetime_(lifetime) {}

std::string session_tokens::signature(std::string_view principal_part,
                                      std::string_view expiry_part,
                                      std::uint64_t generation) const {
    std::string signed_text;
    signed_text.reserve(principal_part.size() + expiry_part.size() + 24);
    signed_text.append(principal_part);
    signed_text.push_back('.');
    signed_text.append(expiry_part);
    signed_text.push_back('.');
    signed_text += std::to_string(generation);
    return protocol::base64_encode(hmac(hash_algorithm::sha256, key_, signed_text),
                                   protocol::base64_alphabet::url);
}

std::string session_tokens::issue(std::string_view principal, std::uint64_t generation,
                                  clock::time_point now) const {
    const auto expiry =
        std::chrono::duration_cast<std::chrono::seconds>((now + lifetime_).time_since_epoch());
    const auto principal_part = protocol::base64_encode(principal, protocol::base64_alphabet::url);
    const auto expiry_part = std::to_string(expiry.count());
    std::string token(prefix);
    token += principal_part;
    token.push_back('.');
    token += expiry_part;
    token.push_back('.');
    token += signature(principal_part, expiry_part, generation);
    return token;
}

std::optional<std::string> session_tokens::claimed_principal(std::string_view token) {
    if (!looks_like(token)) {
        return std::nullopt;
    }
    token.remove_prefix(prefix.size());
    const auto part = token.substr(0, token.find('.'));
    if (part.empty() || part.size() > max_principal_bytes * 4 / 3 + 4) {
        return std::nullopt;
    }
    auto principal = protocol::base64_decode(part, protocol::base64_alphabet::url);
    if (!principal || principal->empty()) {
        return std::nullopt;
    }
    return principal;
}

std::optional<std::string> session_tokens::verify(std::string_view token,
                                                  std::uint64_t generation,
                                                  clock::time_point now, std::string* why) const {
    if (!looks_like(token)) {
        fail(why, "not a session token");
        return std::nullopt;
    }
    token.remove_prefix(prefix.size());
    const auto first = token.find('.');
    const auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
    if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
        fail(why, "malformed session token");
        return std::nullopt;
    }
    const auto principal_part = token.substr(0, first);
    const auto expiry_part = token.substr(first + 1, second - first - 1);
    const auto mac = token.substr(second + 1);
    if (principal_part.size() > max_principal_bytes * 4 / 3 + 4) {
        fail(why, "malformed session token");
        return std::nullopt;
    }
    std::int64_t expiry = 0;
    const auto [end, ec] =
        std::from_chars(expiry_part.data(), expiry_part.data() + expiry_part.size(), expiry);
    if (ec != std::errc{} || end != expiry_part.data() + expiry_part.size()) {
        fail(why, "malformed session token");
        return std::nullopt;
    }
    if (!constant_time_equal(mac, signature(principal_part, expiry_part, generation))) {
        fail(why, "session token not signed by this server, or its user changed since");
        return std::nullopt;
    }
    const auto now_s =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    if (now_s >= expiry) {
        fail(why, "session expired");
        return std::nullopt;
    }
    auto principal = protocol::base64_decode(principal_part, protocol::base64_alphabet::url);
    if (!principal || principal->empty()) {
        fail(why, "malformed session token");
        return std::nullopt;
    }
    return principal;
}

}  // namespace sluice::auth
