// The AWS access keys of a data directory, for the SQS front's Signature Version 4: per access
// key id, the user it belongs to and its secret. SigV4 needs the secret itself (the server
// recomputes the signature), so unlike the SASL credentials it is kept as it is, in a file only
// sluice's user may read. Owned by auth/; `sluice users set --aws-access-key-id` writes it.
#pragma once

#include <filesystem>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::auth {

struct aws_access_key {
    std::string access_key_id;
    std::string user;
    std::string secret;

    bool operator==(const aws_access_key&) const = default;
};

/// Whether `id` may be an access key id: 16 to 128 characters of [A-Za-z0-9].
bool valid_access_key_id(std::string_view id);

/// The keys, in memory, loaded from and saved to one file.
///
/// File (text, mode 0600, rewritten atomically like the SASL credentials):
///   # comment lines and blank lines are ignored
///   sluice-aws-keys 1
///   key ACCESS_KEY_ID USER SECRET_BASE64
/// One key per user: setting a user's key replaces the old one.
///
/// Lifecycle: `load` at start (a missing file is an empty store); changed by `sluice users`
/// on a stopped sluice, or, in upstream mode (an empty path: nothing on disk), replaced from
/// the cluster's _sluice_security topic while sluice runs. Concurrency: thread-safe (lookups
/// take a shared lock).
class aws_key_store {
public:
    explicit aws_key_store(std::filesystem::path file) : file_(std::move(file)) {}
    aws_key_store(aws_key_store&& other) noexcept
        : file_(std::move(other.file_)), keys_(std::move(other.keys_)) {}

    /// Throws std::runtime_error naming the file and line when it does not parse.
    static aws_key_store load(std::filesystem::path file);
    static std::filesystem::path path_in(const std::filesystem::path& data_dir);

    std::optional<aws_access_key> find(std::string_view access_key_id) const;
    std::optional<aws_access_key> find_user(std::string_view user) const;
    std::vector<aws_access_key> keys() const;
    bool empty() const;
    /// Replaces every key at once (upstream mode: the cluster's keys). Nothing is saved.
    void replace_keys(std::vector<aws_access_key> keys);

    /// Gives `user` the key `id` (replacing the user's old key). Throws std::invalid_argument
    /// for an invalid user name or key id, an empty secret, or an id another user holds.
    void set(const std::string& user, const std::string& id, const std::string& secret);
    /// Removes the user's key; false when it had none.
    bool erase_user(std::string_view user);
    /// Throws std::runtime_error on I/O errors; with an empty path, writes nothing.
    void save() const;

private:
    std::optional<aws_access_key> find_locked(std::string_view access_key_id) const;

    std::filesystem::path file_;
    mutable std::shared_mutex mutex_;
    std::vector<aws_access_key> keys_;
};

}  // namespace sluice::auth
