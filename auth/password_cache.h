// Remembers passwords that were checked recently, so that HTTP Basic, which sends the password
// with every request, runs the PBKDF2 check once per user and password rather than once per
// request (a few milliseconds of CPU each). Owned by auth/; the HTTP front's authenticator
// keeps one.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sluice::auth {

/// Successful (user, password) checks, keyed by an HMAC of the pair under a key drawn at start,
/// never the password itself. An entry holds until `ttl` after its check or until the users
/// change: each entry records the credential store's generation, and a store whose generation
/// moved on (a user added, changed or removed) makes every older entry a miss. At most
/// `max_entries` (when full, expired entries go first, then everything). Thread-safe. The clock
/// is passed in, so tests need no sleeps.
class password_cache {
public:
    using clock = std::chrono::steady_clock;

    struct options {
        std::chrono::seconds ttl{300};
        std::size_t max_entries = 4096;
    };

    password_cache() : password_cache(options{}) {}
    explicit password_cache(options o);

    /// Whether `user` with `password` passed a check at store generation `generation` less than
    /// `ttl` before `now`.
    bool contains(std::string_view user, std::string_view password, std::uint64_t generation,
                  clock::time_point now) const;
    /// Records a check that passed at `generation`.
    void insert(std::string_view user, std::string_view password, std::uint64_t generation,
                clock::time_point now);
    std::size_t size() const;

private:
    struct entry {
        std::uint64_t generation = 0;
        clock::time_point checked;
    };
    std::string key_of(std::string_view user, std::string_view password) const;

    options options_;
    std::string hmac_key_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, entry> entries_;
};

}  // namespace sluice::auth
