#include "auth/credential_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "auth/text_fields.h"
#include "protocol/core/base64.h"

namespace sluice::auth {
namespace {

constexpr std::string_view file_magic = "sluice-credentials 1";

std::string b64(std::string_view bytes) { return protocol::base64_encode(bytes); }

std::vector<std::string_view> split_on(std::string_view s, char sep) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t at = s.find(sep, start);
        if (at == std::string_view::npos) {
            parts.push_back(s.substr(start));
            return parts;
        }
        parts.push_back(s.substr(start, at - start));
        start = at + 1;
    }
}

std::optional<int> parse_iterations(std::string_view s) {
    int v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || v < min_scram_iterations ||
        v > max_scram_iterations) {
        return std::nullopt;
    }
    return v;
}

std::optional<scram_credential> parse_scram(std::string_view value, hash_algorithm h) {
    auto parts = split_on(value, ':');
    if (parts.size() != 4) {
        return std::nullopt;
    }
    auto iterations = parse_iterations(parts[0]);
    auto salt = protocol::base64_decode(parts[1]);
    auto stored = protocol::base64_decode(parts[2]);
    auto server = protocol::base64_decode(parts[3]);
    if (!iterations || !salt || salt->empty() || !stored || !server ||
        stored->size() != digest_size(h) || server->size() != digest_size(h)) {
        return std::nullopt;
    }
    return scram_credential{std::move(*salt), *iterations, std::move(*stored), std::move(*server)};
}

std::optional<plain_verifier> parse_plain(std::string_view value) {
    auto parts = split_on(value, ':');
    if (parts.size() != 3) {
        return std::nullopt;
    }
    auto iterations = parse_iterations(parts[0]);
    auto salt = protocol::base64_decode(parts[1]);
    auto derived = protocol::base64_decode(parts[2]);
    if (!iterations || !salt || salt->empty() || !derived ||
        derived->size() != digest_size(hash_algorithm::sha512)) {
        return std::nullopt;
    }
    return plain_verifier{std::move(*salt), *iterations, std::move(*derived)};
}

std::string format_scram(const scram_credential& c) {
    return std::to_string(c.iterations) + ":" + b64(c.salt) + ":" + b64(c.stored_key) + ":" +
           b64(c.server_key);
}

[[noreturn]] void fail_io(const std::string& what, const std::filesystem::path& p) {
    throw std::runtime_error(what + " " + p.string() + ": " + std::strerror(errno));
}

void write_all(int fd, std::string_view data, const std::filesystem::path& p) {
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fail_io("cannot write", p);
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
}

}  // namespace

scram_credential scram_credential_from_salted(hash_algorithm h, std::string salt,
                                              std::string_view salted_password, int iterations) {
    scram_credential c;
    c.salt = std::move(salt);
    c.iterations = iterations;
    c.stored_key = hash(h, hmac(h, salted_password, "Client Key"));
    c.server_key = hmac(h, salted_password, "Server Key");
    return c;
}

scram_credential make_scram_credential(hash_algorithm h, std::string_view password,
                                       int iterations, std::string salt) {
    if (salt.empty()) {
        salt = random_bytes(32);
    }
    const std::string salted = pbkdf2(h, password, salt, iterations);
    return scram_credential_from_salted(h, std::move(salt), salted, iterations);
}

bool verify_scram_password(hash_algorithm h, const scram_credential& c,
                           std::string_view password) {
    const std::string salted = pbkdf2(h, password, c.salt, c.iterations);
    return constant_time_equal(hash(h, hmac(h, salted, "Client Key")), c.stored_key);
}

plain_verifier make_plain_verifier(std::string_view password, int iterations, std::string salt) {
    if (salt.empty()) {
        salt = random_bytes(32);
    }
    plain_verifier v;
    v.derived = pbkdf2(hash_algorithm::sha512, password, salt, iterations);
    v.salt = std::move(salt);
    v.iterations = iterations;
    return v;
}

user_credentials make_user_credentials(std::string_view password, int iterations) {
    user_credentials u;
    u.scram_sha_256 = make_scram_credential(hash_algorithm::sha256, password, iterations);
    u.scram_sha_512 = make_scram_credential(hash_algorithm::sha512, password, iterations);
    u.plain = make_plain_verifier(password, iterations);
    return u;
}

bool verify_plain(const plain_verifier& v, std::string_view password) {
    return constant_time_equal(pbkdf2(hash_algorithm::sha512, password, v.salt, v.iterations),
                               v.derived);
}

bool valid_user_name(std::string_view name) {
    if (name.empty() || name.size() > 255) {
        return false;
    }
    for (unsigned char c : name) {
        if (c <= 0x20 || c == 0x7f) {
            return false;
        }
    }
    return true;
}

credential_store::credential_store(std::filesystem::path file)
    : file_(std::move(file)), decoy_key_(random_bytes(32)) {}

credential_store::credential_store(credential_store&& other) noexcept
    : file_(std::move(other.file_)),
      decoy_key_(std::move(other.decoy_key_)),
      users_(std::move(other.users_)),
      generation_(other.generation_.load()) {}

std::filesystem::path credential_store::path_in(const std::filesystem::path& data_dir) {
    return data_dir / "credentials";
}

std::string format_user_credentials(const user_credentials& c) {
    std::string out;
    auto add = [&out](std::string field) {
        if (!out.empty()) {
            out += ' ';
        }
        out += field;
    };
    if (c.scram_sha_256) {
        add("scram-sha-256=" + format_scram(*c.scram_sha_256));
    }
    if (c.scram_sha_512) {
        add("scram-sha-512=" + format_scram(*c.scram_sha_512));
    }
    if (c.plain) {
        add("plain=" + std::to_string(c.plain->iterations) + ":" + b64(c.plain->salt) + ":" +
            b64(c.plain->derived));
    }
    return out;
}

std::optional<user_credentials> parse_user_credentials(std::string_view text, std::string* why) {
    auto refuse = [why](std::string reason) -> std::optional<user_credentials> {
        if (why != nullptr) {
            *why = std::move(reason);
        }
        return std::nullopt;
    };
    if (text.empty()) {
        return refuse("no mechanism");
    }
    user_credentials creds;
    for (const auto field : split_on(text, ' ')) {
        const auto eq = field.find('=');
        const auto mech = field.substr(0, eq);
        const auto value =
            eq == std::string_view::npos ? std::string_view{} : field.substr(eq + 1);
        if (mech == "scram-sha-256") {
            creds.scram_sha_256 = parse_scram(value, hash_algorithm::sha256);
        } else if (mech == "scram-sha-512") {
            creds.scram_sha_512 = parse_scram(value, hash_algorithm::sha512);
        } else if (mech == "plain") {
            creds.plain = parse_plain(value);
        } else {
            return refuse("unknown mechanism '" + std::string(mech) + "'");
        }
        if ((mech == "scram-sha-256" && !creds.scram_sha_256) ||
            (mech == "scram-sha-512" && !creds.scram_sha_512) ||
            (mech == "plain" && !creds.plain)) {
            return refuse("malformed " + std::string(mech) + " credential");
        }
    }
    return creds;
}

credential_store credential_store::load(std::filesystem::path file) {
    credential_store store(file);
    read_record_file(file, file_magic, "credentials", [&](std::string_view line) {
        auto fields = split_on(line, ' ');
        if (fields.size() < 3 || fields[0] != "user" || !valid_user_name(fields[1])) {
            throw bad_record("expected 'user NAME MECHANISM=...'");
        }
        const auto mechanisms = line.substr(static_cast<std::size_t>(
            fields[2].data() - line.data()));
        std::string why;
        auto creds = parse_user_credentials(mechanisms, &why);
        if (!creds) {
            throw bad_record(why);
        }
        store.users_[std::string(fields[1])] = std::move(*creds);
    });
    return store;
}

std::optional<user_credentials> credential_store::find(std::string_view user) const {
    std::shared_lock lock(mutex_);
    auto it = users_.find(user);
    if (it == users_.end()) {
        return std::nullopt;
    }
    return it->second;
}

std::vector<std::string> credential_store::users() const {
    std::shared_lock lock(mutex_);
    std::vector<std::string> names;
    names.reserve(users_.size());
    for (const auto& [name, creds] : users_) {
        names.push_back(name);
    }
    return names;
}

bool credential_store::empty() const {
    std::shared_lock lock(mutex_);
    return users_.empty();
}

void credential_store::set(const std::string& user, user_credentials creds) {
    if (!valid_user_name(user)) {
        throw std::invalid_argument(
            "a user name is 1 to 255 bytes without spaces or control characters");
    }
    std::unique_lock lock(mutex_);
    users_[user] = std::move(creds);
    generation_.fetch_add(1, std::memory_order_acq_rel);
}

void credential_store::replace(const std::string& user, std::optional<user_credentials> creds) {
    if (!creds) {
        erase(user);
        return;
    }
    set(user, std::move(*creds));
}

bool credential_store::erase(std::string_view user) {
    std::unique_lock lock(mutex_);
    auto it = users_.find(user);
    if (it == users_.end()) {
        return false;
    }
    users_.erase(it);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return true;
}

void write_private_file(const std::filesystem::path& file, std::string_view data) {
    auto tmp = file;
    tmp += ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        fail_io("cannot create", tmp);
    }
    try {
        // A leftover temporary file from an older run may have had other permissions.
        if (::fchmod(fd, 0600) != 0) {
            fail_io("cannot chmod", tmp);
        }
        write_all(fd, data, tmp);
        if (::fsync(fd) != 0) {
            fail_io("cannot fsync", tmp);
        }
    } catch (...) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    ::close(fd);
    if (::rename(tmp.c_str(), file.c_str()) != 0) {
        ::unlink(tmp.c_str());
        fail_io("cannot rename over", file);
    }
    // The rename is durable once the directory is synced.
    auto dir = file.parent_path();
    if (dir.empty()) {
        dir = ".";
    }
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

void credential_store::save() const {
    if (file_.empty()) {
        return;  // a store of the cluster's users (upstream mode): nothing on disk
    }
    std::lock_guard save_lock(save_mutex_);
    std::ostringstream text;
    text << "# SASL users of this sluice (salted credentials, no passwords).\n"
         << "# Written by sluice; change with `sluice users`.\n"
         << file_magic << "\n";
    {
        std::shared_lock lock(mutex_);
        for (const auto& [name, c] : users_) {
            text << "user " << name << ' ' << format_user_credentials(c) << "\n";
        }
    }
    write_private_file(file_, text.str());
}

}  // namespace sluice::auth
