#include "gateway/cli/security_state.h"

#include <stdexcept>
#include <utility>

#include "gateway/core/config.h"
#include "gateway/server/security_topic.h"

namespace sluice::gateway {

bool security_location::take(command_flags& flags, const std::string& command) {
    const std::string& arg = flags.arg();
    auto nonempty = [&] {
        std::string v = flags.value();
        if (v.empty()) {
            throw config_error(command + ": " + arg + ": empty value");
        }
        return v;
    };
    if (arg == "--data-dir") {
        data_dir = nonempty();
        return true;
    }
    if (arg == "--upstream") {
        upstream["upstream.bootstrap.servers"] = nonempty();
        return true;
    }
    if (arg.starts_with("--upstream.")) {
        const std::string key = arg.substr(2);
        if (key == "upstream.") {
            throw config_error(command + ": " + arg + ": needs a librdkafka property name");
        }
        upstream[key] = flags.value();
        return true;
    }
    return false;
}

void security_location::check(const std::string& what) const {
    if (data_dir && is_upstream()) {
        throw config_error(what + ": give --data-dir DIR or --upstream BOOTSTRAP, not both");
    }
    if (is_upstream() && !upstream.contains("upstream.bootstrap.servers")) {
        throw config_error(what + ": --upstream.PROPERTY needs --upstream BOOTSTRAP");
    }
    if (!data_dir && !is_upstream()) {
        throw config_error(what + ": --data-dir DIR is required (or --upstream BOOTSTRAP)");
    }
}

std::string security_location_usage() {
    return R"(
With --upstream HOST:PORT[,...] instead of --data-dir, the command reads and changes
the state a fleet of upstream-mode gateways shares: the compacted topic _sluice_security on
that Kafka cluster (created when missing). A change is produced with acks=all and the command
returns once the cluster stored it; every gateway applies it within a second. Connection
settings as `sluice --upstream` takes them: --upstream.PROPERTY VALUE for each librdkafka
property (security.protocol, sasl.*, ssl.*), --upstream.request.timeout.ms N (default 30000).
)";
}

security_state::security_state(std::string command, const security_location& where,
                               const upstream_opener& open, const std::string& lock_reason)
    : command_(std::move(command)), data_dir_(where.data_dir) {
    if (!where.is_upstream()) {
        // The lock a running sluice holds: the files are never rewritten under a server.
        lock_.emplace(*data_dir_, lock_reason);
        where_ = "the data dir " + data_dir_->string();
        return;
    }
    config cfg;
    for (const auto& [key, value] : where.upstream) {
        cfg.properties[key] = value;
        cfg.sources[key] = "--" + key;
    }
    const upstream_settings settings = read_upstream_settings(cfg);
    if (!open) {
        throw config_error(command_ + ": --upstream is not available in this build");
    }
    deadline_ = settings.request_timeout;
    client_ = open(settings);
    where_ = std::string(auth::security_topic) + " on " + settings.bootstrap_servers;
    read_ = read_security_snapshot(*client_, deadline_);
}

security_state::~security_state() = default;

auth::credential_store& security_state::users() {
    if (!users_) {
        if (upstream()) {
            users_ = std::make_unique<auth::credential_store>(std::filesystem::path{});
            for (const auto& [name, creds] : read_.users) {
                users_->replace(name, creds);
            }
        } else {
            try {
                users_ = std::make_unique<auth::credential_store>(
                    auth::credential_store::load(auth::credential_store::path_in(*data_dir_)));
            } catch (const std::runtime_error& e) {
                throw config_error(command_ + ": " + e.what());
            }
        }
    }
    return *users_;
}

auth::aws_key_store& security_state::aws_keys() {
    if (!aws_keys_) {
        if (upstream()) {
            aws_keys_ = std::make_unique<auth::aws_key_store>(std::filesystem::path{});
            std::vector<auth::aws_access_key> keys;
            for (const auto& [user, key] : read_.aws_keys) {
                keys.push_back(key);
            }
            aws_keys_->replace_keys(std::move(keys));
        } else {
            try {
                aws_keys_ = std::make_unique<auth::aws_key_store>(
                    auth::aws_key_store::load(auth::aws_key_store::path_in(*data_dir_)));
            } catch (const std::runtime_error& e) {
                throw config_error(command_ + ": " + e.what());
            }
        }
    }
    return *aws_keys_;
}

auth::authorizer& security_state::acls() {
    if (!acls_) {
        auth::authorizer_settings settings;
        settings.enabled = true;
        try {
            acls_ = std::make_unique<auth::authorizer>(
                settings, upstream() ? std::filesystem::path{}
                                     : auth::authorizer::path_in(*data_dir_));
        } catch (const std::runtime_error& e) {
            throw config_error(command_ + ": " + e.what());
        }
        if (upstream()) {
            acls_->replace_acls({read_.acls.begin(), read_.acls.end()});
        }
    }
    return *acls_;
}

auth::client_quotas& security_state::quotas() {
    if (!quotas_) {
        try {
            quotas_ = std::make_unique<auth::client_quotas>(
                auth::quota_settings{}, upstream() ? std::filesystem::path{}
                                                   : auth::client_quotas::path_in(*data_dir_));
        } catch (const std::runtime_error& e) {
            throw config_error(command_ + ": " + e.what());
        }
        if (upstream()) {
            quotas_->replace_entries(read_.quotas);
        }
    }
    return *quotas_;
}

auth::security_snapshot security_state::current() const {
    // What the command did not open is as it was read.
    auth::security_snapshot now = read_;
    if (users_) {
        now.users.clear();
        for (const auto& name : users_->users()) {
            if (auto creds = users_->find(name)) {
                now.users.emplace(name, std::move(*creds));
            }
        }
    }
    if (aws_keys_) {
        now.aws_keys.clear();
        for (auto& key : aws_keys_->keys()) {
            std::string user = key.user;
            now.aws_keys.emplace(std::move(user), std::move(key));
        }
    }
    if (acls_) {
        const auto all = acls_->acls();
        now.acls = {all.begin(), all.end()};
    }
    if (quotas_) {
        now.quotas = quotas_->entries();
    }
    return now;
}

std::size_t security_state::publish() {
    if (!upstream()) {
        return 0;
    }
    auto records = auth::security_diff(read_, current());
    const std::size_t n = records.size();
    write_security_records(*client_, std::move(records), deadline_);
    read_ = current();
    return n;
}

}  // namespace sluice::gateway
