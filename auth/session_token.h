// Console sessions: a short-lived token the HTTP front issues to a browser that signed in with
// a user name and password (HTTP Basic), so that the page does not keep the password and can
// open the WebSocket and SSE streams, which take no headers, with `access_token=`.
//
// A token is "sluice-session.<principal, base64url>.<expiry, Unix seconds>.<HMAC-SHA256,
// base64url>", signed with a key drawn at random when the process starts: every token ends
// with the process, and with any change of what the caller binds it to (the HTTP front binds a
// session to its user's stored credentials), so a deleted user or a changed password ends that
// user's sessions at once.
// Thread-safe: const after construction.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::auth {

class session_tokens {
public:
    using clock = std::chrono::system_clock;

    /// Tokens valid for `lifetime` from their issue.
    explicit session_tokens(std::chrono::seconds lifetime = std::chrono::hours(8));

    static constexpr std::string_view prefix = "sluice-session.";
    /// Whether `token` has the shape of a session token (its prefix), not whether it is valid.
    static bool looks_like(std::string_view token) { return token.starts_with(prefix); }

    /// A token for `principal` ("User:alice"), bound to the users' `generation`.
    std::string issue(std::string_view principal, std::uint64_t generation,
                      clock::time_point now) const;

    /// The principal a token names, decoded but not checked: what the caller looks up to
    /// know which `generation` to verify it against. Nullopt for a malformed token.
    static std::optional<std::string> claimed_principal(std::string_view token);

    /// The principal of a valid token: well formed, signed by this process for `generation`,
    /// not expired at `now`. Nullopt otherwise (`why`, when given, says which, never echoing
    /// the token).
    std::optional<std::string> verify(std::string_view token, std::uint64_t generation,
                                      clock::time_point now, std::string* why = nullptr) const;

    std::chrono::seconds lifetime() const { return lifetime_; }

private:
    std::string signature(std::string_view principal_part, std::string_view expiry_part,
                          std::uint64_t generation) const;

    std::string key_;
    std::chrono::seconds lifetime_;
};

}  // namespace sluice::auth
