// The SASL users of one data directory: per user, salted SCRAM-SHA-256 and SCRAM-SHA-512
// credentials and a salted PLAIN verifier, never a password. Owned by auth/; the Kafka front's
// SASL mechanisms read it, `sluice users` writes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "auth/crypto.h"

namespace sluice::auth {

/// Kafka's lower bound for SCRAM iterations (ScramMechanism.minIterations), and our default.
constexpr int min_scram_iterations = 4096;
constexpr int max_scram_iterations = 1000000;

/// RFC 5802 section 3: what a server keeps for one user and one hash. StoredKey lets it check a
/// client proof, ServerKey lets it sign its answer; neither lets anyone log in.
struct scram_credential {
    std::string salt;
    int iterations = min_scram_iterations;
    std::string stored_key;  // H(HMAC(SaltedPassword, "Client Key"))
    std::string server_key;  // HMAC(SaltedPassword, "Server Key")

    bool operator==(const scram_credential&) const = default;
};

/// How PLAIN passwords are checked: PBKDF2-HMAC-SHA-512 of the password with its own salt. The
/// salt differs from the SCRAM ones on purpose: a SCRAM SaltedPassword is enough to log in
/// with SCRAM, so it must never be what is stored.
struct plain_verifier {
    std::string salt;
    int iterations = min_scram_iterations;
    std::string derived;

    bool operator==(const plain_verifier&) const = default;
};

struct user_credentials {
    std::optional<scram_credential> scram_sha_256;
    std::optional<scram_credential> scram_sha_512;
    std::optional<plain_verifier> plain;

    bool operator==(const user_credentials&) const = default;
};

/// The stored credential for a SaltedPassword the client derived itself (as
/// AlterUserScramCredentials carries it: the broker never sees the password).
scram_credential scram_credential_from_salted(hash_algorithm h, std::string salt,
                                              std::string_view salted_password, int iterations);
/// Whether `password` derives `c` (PLAIN logins of users changed through
/// AlterUserScramCredentials, which leaves no PLAIN verifier).
bool verify_scram_password(hash_algorithm h, const scram_credential& c, std::string_view password);

/// Derives a SCRAM credential from a password (random 32-byte salt unless one is given).
scram_credential make_scram_credential(hash_algorithm h, std::string_view password,
                                       int iterations, std::string salt = {});
plain_verifier make_plain_verifier(std::string_view password, int iterations,
                                   std::string salt = {});
/// Every credential of a new user from one password.
user_credentials make_user_credentials(std::string_view password,
                                       int iterations = min_scram_iterations);
/// Whether `password` matches (PBKDF2 with the verifier's salt, constant-time compare).
bool verify_plain(const plain_verifier& v, std::string_view password);

/// A user's credentials as the file writes them after the name ("scram-sha-256=ITER:SALT:
/// STOREDKEY:SERVERKEY scram-sha-512=... plain=ITER:SALT:HASH"), and back: nullopt (with the
/// reason in `why`) for an empty text, an unknown mechanism or a malformed credential.
std::string format_user_credentials(const user_credentials& c);
std::optional<user_credentials> parse_user_credentials(std::string_view text,
                                                       std::string* why = nullptr);

/// Replaces `file` with `data` atomically and durably, readable by the owner only (mode 0600):
/// a temporary file beside it, fsync, rename, fsync of the directory. Throws std::runtime_error
/// on I/O errors.
void write_private_file(const std::filesystem::path& file, std::string_view data);

/// Whether `name` may be a user: 1 to 255 bytes, none of them a space or a control character.
bool valid_user_name(std::string_view name);

/// The users, in memory, loaded from and saved to one file.
///
/// File (text, UTF-8, one user per line, fields separated by one space; base64 is RFC 4648's
/// standard alphabet):
///   # comment lines and blank lines are ignored
///   sluice-credentials 1
///   user NAME scram-sha-256=ITER:SALT:STOREDKEY:SERVERKEY scram-sha-512=... plain=ITER:SALT:HASH
/// A user line carries at least one mechanism; unknown mechanism names are refused.
/// Writes are atomic: a temporary file in the same directory (mode 0600), fsync, rename over
/// the old file, fsync of the directory. After a crash the old or the new file is there, never
/// a mix; a leftover temporary file is ignored and replaced by the next save.
///
/// Lifecycle: `load` at start (a missing file is an empty store). Concurrency: thread-safe;
/// lookups take a shared lock, changes an exclusive one.
class credential_store {
public:
    /// An empty store that saves to `file`; with an empty path, save() writes nothing (the
    /// users of upstream mode live in the cluster's _sluice_security topic).
    explicit credential_store(std::filesystem::path file);

    /// Reads `file`; a missing file gives an empty store. Throws std::runtime_error naming the
    /// file and line when it cannot be read or does not parse.
    static credential_store load(std::filesystem::path file);

    /// The file name inside a data directory.
    static std::filesystem::path path_in(const std::filesystem::path& data_dir);

    std::optional<user_credentials> find(std::string_view user) const;
    std::vector<std::string> users() const;
    bool empty() const;
    /// Adds or replaces a user in memory (save() writes it). Throws std::invalid_argument for an
    /// invalid name.
    void set(const std::string& user, user_credentials creds);
    /// Replaces a user's credentials, or removes the user when `creds` is nullopt.
    void replace(const std::string& user, std::optional<user_credentials> creds);
    /// Removes a user in memory; false when there was none.
    bool erase(std::string_view user);

    /// Writes the whole store atomically (see above). Throws std::runtime_error on I/O errors.
    void save() const;

    /// A per-store random key for deriving plausible fake salts for unknown users, so that a
    /// SCRAM exchange for a user who does not exist looks like one for a user who does.
    const std::string& decoy_key() const { return decoy_key_; }

    const std::filesystem::path& file() const { return file_; }

    /// Moves on with every change of a user (set, replace, erase): what a cache of checked
    /// passwords compares against to notice that users changed.
    std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

    credential_store(credential_store&& other) noexcept;

private:
    std::filesystem::path file_;
    std::string decoy_key_;
    mutable std::shared_mutex mutex_;
    mutable std::mutex save_mutex_;  // one save at a time (they share the temporary file)
    std::map<std::string, user_credentials, std::less<>> users_;
    std::atomic<std::uint64_t> generation_{0};
};

}  // namespace sluice::auth
