#include "auth/password_cache.h"

#include <iterator>

#include "auth/crypto.h"

namespace sluice::auth {

password_cache::password_cache(options o) : options_(o), hmac_key_(random_bytes(32)) {}

std::string password_cache::key_of(std::string_view user, std::string_view password) const {
    // The user name cannot hold a NUL (valid_user_name), so the pair is unambiguous.
    std::string message;
    message.reserve(user.size() + 1 + password.size());
    message.append(user);
    message.push_back('\0');
    message.append(password);
    return hmac(hash_algorithm::sha256, hmac_key_, message);
}

bool password_cache::contains(std::string_view user, std::string_view password,
                              std::uint64_t generation, clock::time_point now) const {
    const auto key = key_of(user, password);
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(key);
    return it != entries_.end() && it->second.generation == generation &&
           now - it->second.checked < options_.ttl;
}

void password_cache::insert(std::string_view user, std::string_view password,
                            std::uint64_t generation, clock::time_point now) {
    auto key = key_of(user, password);
    std::lock_guard lock(mutex_);
    if (entries_.size() >= options_.max_entries && !entries_.contains(key)) {
        std::erase_if(entries_, [&](const auto& item) {
            return item.second.generation != generation ||
                   now - item.second.checked >= options_.ttl;
        });
        if (entries_.size() >= options_.max_entries) {
            entries_.clear();
        }
    }
    entries_[std::move(key)] = entry{generation, now};
}

std::size_t password_cache::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

}  // namespace sluice::auth
