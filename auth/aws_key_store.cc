#include "auth/aws_key_store.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "auth/credential_store.h"
#include "auth/text_fields.h"
#include "protocol/core/base64.h"

namespace sluice::auth {
namespace {

constexpr std::string_view file_magic = "sluice-aws-keys 1";

}  // namespace

bool valid_access_key_id(std::string_view id) {
    return id.size() >= 16 && id.size() <= 128 &&
           std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isalnum(c); });
}

std::filesystem::path aws_key_store::path_in(const std::filesystem::path& data_dir) {
    return data_dir / "aws-keys";
}

aws_key_store aws_key_store::load(std::filesystem::path file) {
    aws_key_store store(file);
    read_record_file(file, file_magic, "AWS access key", [&](std::string_view line) {
        std::istringstream fields{std::string(line)};
        std::string kind, id, user, secret_b64, extra;
        fields >> kind >> id >> user >> secret_b64;
        auto secret = protocol::base64_decode(secret_b64);
        if (kind != "key" || !valid_access_key_id(id) || !valid_user_name(user) || !secret ||
            secret->empty() || (fields >> extra)) {
            throw bad_record("expected 'key ACCESS_KEY_ID USER SECRET'");
        }
        store.keys_.push_back(aws_access_key{id, user, *secret});
    });
    return store;
}

std::optional<aws_access_key> aws_key_store::find(std::string_view access_key_id) const {
    std::shared_lock lock(mutex_);
    return find_locked(access_key_id);
}

std::optional<aws_access_key> aws_key_store::find_locked(std::string_view access_key_id) const {
    for (const auto& k : keys_) {
        if (k.access_key_id == access_key_id) {
            return k;
        }
    }
    return std::nullopt;
}

std::vector<aws_access_key> aws_key_store::keys() const {
    std::shared_lock lock(mutex_);
    return keys_;
}

bool aws_key_store::empty() const {
    std::shared_lock lock(mutex_);
    return keys_.empty();
}

void aws_key_store::replace_keys(std::vector<aws_access_key> keys) {
    std::unique_lock lock(mutex_);
    keys_ = std::move(keys);
}

std::optional<aws_access_key> aws_key_store::find_user(std::string_view user) const {
    std::shared_lock lock(mutex_);
    for (const auto& k : keys_) {
        if (k.user == user) {
            return k;
        }
    }
    return std::nullopt;
}

void aws_key_store::set(const std::string& user, const std::string& id,
                        const std::string& secret) {
    if (!valid_user_name(user)) {
        throw std::invalid_argument("invalid user name");
    }
    if (!valid_access_key_id(id)) {
        throw std::invalid_argument("an access key id is 16 to 128 letters and digits");
    }
    if (secret.empty() || secret.size() > 1024) {
        throw std::invalid_argument("the secret access key must be 1 to 1024 bytes");
    }
    std::unique_lock lock(mutex_);
    if (auto other = find_locked(id); other && other->user != user) {
        throw std::invalid_argument("access key id " + id + " belongs to another user");
    }
    std::erase_if(keys_, [&](const aws_access_key& k) { return k.user == user; });
    keys_.push_back(aws_access_key{id, user, secret});
}

bool aws_key_store::erase_user(std::string_view user) {
    std::unique_lock lock(mutex_);
    const auto before = keys_.size();
    std::erase_if(keys_, [&](const aws_access_key& k) { return k.user == user; });
    return keys_.size() != before;
}

void aws_key_store::save() const {
    if (file_.empty()) {
        return;
    }
    std::shared_lock lock(mutex_);
    std::string text = "# AWS access keys of this sluice's SQS users (secrets: keep private).\n"
                       "# Written by sluice; change with `sluice users`.\n";
    text += file_magic;
    text += "\n";
    for (const auto& k : keys_) {
        text += "key " + k.access_key_id + " " + k.user + " " + protocol::base64_encode(k.secret) +
                "\n";
    }
    write_private_file(file_, text);
}

}  // namespace sluice::auth
