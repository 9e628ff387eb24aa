// Where `sluice users|acls|quotas` find the users, ACLs, quotas and AWS keys they change: a
// stopped sluice's data directory (its files, under its lock), or with `--upstream BOOTSTRAP`
// the cluster's compacted topic `_sluice_security` that every upstream-mode gateway tails
// (gateway/server/security_topic.h). The commands edit the same auth/ stores either way; in
// upstream mode the stores are in memory, read from the topic, and publish() produces what
// changed (acks=all) and waits until the cluster stored it.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "auth/authorizer.h"
#include "auth/aws_key_store.h"
#include "auth/client_quotas.h"
#include "auth/credential_store.h"
#include "auth/security_records.h"
#include "backend/api/client.h"
#include "gateway/cli/command_flags.h"
#include "gateway/core/data_dir_lock.h"
#include "gateway/server/upstream_settings.h"

namespace sluice::gateway {

/// Opens the client level over an upstream cluster. main.cc hands in run_server's
/// (gateway/server/server.h): the commands link no client implementation themselves.
using upstream_opener =
    std::function<std::unique_ptr<backend::api::client>(const upstream_settings&)>;

/// The flags naming where the state is: --data-dir DIR, or --upstream BOOTSTRAP with any
/// --upstream.PROPERTY VALUE (librdkafka's properties, and upstream.request.timeout.ms, as
/// `sluice --upstream` takes them).
struct security_location {
    std::optional<std::filesystem::path> data_dir;
    std::map<std::string, std::string> upstream;  // "upstream.bootstrap.servers", ...

    bool is_upstream() const { return !upstream.empty(); }
    /// Takes the current flag when it is --data-dir, --upstream or --upstream.PROPERTY; false
    /// (nothing consumed) for any other. Throws config_error for an empty value.
    bool take(command_flags& flags, const std::string& command);
    /// Throws config_error unless exactly one of --data-dir and --upstream was given.
    void check(const std::string& what) const;
};

/// The usage lines the commands share about --upstream.
std::string security_location_usage();

/// One command's view of the state. Not thread-safe; lives for one command.
class security_state {
public:
    /// File mode: takes the data dir's lock (`lock_reason` says why a running sluice refuses).
    /// Upstream mode: opens the cluster with `open` and reads the topic. Throws config_error
    /// for a bad flag or an unreadable file, std::runtime_error when the cluster cannot be read.
    security_state(std::string command, const security_location& where,
                   const upstream_opener& open, const std::string& lock_reason);
    ~security_state();
    security_state(const security_state&) = delete;
    security_state& operator=(const security_state&) = delete;

    bool upstream() const { return client_ != nullptr; }
    /// "the data dir DIR" or "_sluice_security on BOOTSTRAP", for messages.
    const std::string& where() const { return where_; }

    /// The stores, opened at first use (files: read from the data dir; upstream: filled from
    /// the topic, saving nothing). Throws config_error when a file cannot be read.
    auth::credential_store& users();
    auth::aws_key_store& aws_keys();
    auth::authorizer& acls();
    auth::client_quotas& quotas();

    /// Upstream mode: produces a record for each entity changed since the topic was read
    /// (acks=all) and returns once the cluster stored them all, or throws std::runtime_error.
    /// File mode: nothing (the stores saved themselves). Returns the number of records.
    std::size_t publish();

private:
    auth::security_snapshot current() const;

    std::string command_;
    std::string where_;
    std::optional<std::filesystem::path> data_dir_;
    std::optional<data_dir_lock> lock_;
    std::chrono::milliseconds deadline_{30000};
    std::unique_ptr<backend::api::client> client_;
    auth::security_snapshot read_;
    std::unique_ptr<auth::credential_store> users_;
    std::unique_ptr<auth::aws_key_store> aws_keys_;
    std::unique_ptr<auth::authorizer> acls_;
    std::unique_ptr<auth::client_quotas> quotas_;
};

}  // namespace sluice::gateway
