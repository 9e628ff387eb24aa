// Upstream mode's shared security state (owned by gateway/server): the users, ACLs, client
// quotas and AWS keys of a fleet of gateways live in the compacted topic `_sluice_security` of
// the cluster (record format: auth/security_records.h). Every gateway tails it into its stores
// (security_mirror); `sluice users|acls|quotas --upstream` reads and writes it (the functions
// below). Stands on the client level (backend/api) only.
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "auth/security_records.h"
#include "backend/api/client.h"
#include "gateway/http/console_users.h"
#include "gateway/http/shared_acls.h"

namespace sluice::gateway {

/// Everything the topic holds now (its end offset when asked), on the calling thread; an
/// absent topic is an empty state. Throws std::runtime_error, with the cluster's reason, when
/// it cannot be read by `deadline`.
auth::security_snapshot read_security_snapshot(backend::api::client& client,
                                               std::chrono::milliseconds deadline);

/// Produces `records` in order (acks=all; the topic is created when missing) and waits until
/// the cluster stored every one. Throws std::runtime_error, with the cluster's reason, when
/// they are not stored by `deadline`.
void write_security_records(backend::api::client& client,
                            std::vector<auth::security_record> records,
                            std::chrono::milliseconds deadline);

/// write_security_records as a coroutine on the caller's executor (an HTTP route's): the
/// same records, wait and failures.
boost::asio::awaitable<void> publish_security_records(backend::api::client& client,
                                                      std::vector<auth::security_record> records,
                                                      std::chrono::milliseconds deadline);

/// The console's user changes in upstream mode (gateway/http/console_users.h): each one a
/// record of the topic, stored (acks=all) before the console applies it to this gateway's
/// store; every other gateway's mirror applies it as it reads it. Thread-safe (stateless over
/// the client level).
class shared_security_users final : public shared_users {
public:
    explicit shared_security_users(backend::api::client& client,
                                   std::chrono::milliseconds deadline = std::chrono::seconds(30))
        : client_(client), deadline_(deadline) {}

    boost::asio::awaitable<void> store(std::string user,
                                       std::optional<auth::user_credentials> creds) override;

private:
    backend::api::client& client_;
    std::chrono::milliseconds deadline_;
};

/// The console's changes of the gateway's own ACLs in upstream mode (gateway/http/
/// shared_acls.h): one record per binding, as `sluice acls --upstream` writes them
/// (auth::acl_record), stored (acks=all) before the change is applied to `acls` (in memory,
/// auth::authorizer::apply_shared); every other gateway's mirror applies them as it reads
/// them. Thread-safe (the authorizer serialises its changes).
class shared_security_acls final : public shared_acls {
public:
    shared_security_acls(backend::api::client& client, auth::authorizer& acls,
                         std::chrono::milliseconds deadline = std::chrono::seconds(30))
        : client_(client), acls_(acls), deadline_(deadline) {}

    boost::asio::awaitable<void> store(std::vector<auth::acl_binding> bindings,
                                       bool present) override;

private:
    backend::api::client& client_;
    auth::authorizer& acls_;
    std::chrono::milliseconds deadline_;
};

/// A gateway's copy of the topic, kept in its stores: what the stores hold when it is made
/// (the data dir's own entries) is the base the records apply to (a record replaces or deletes
/// the entry of its key); reads the topic from its start (creating it when missing), then
/// tails it for good, and applies each change to the stores as soon as
/// it is polled (a consumer parked in a long poll, no sleep). Records it cannot use are skipped
/// with a log line (an unknown kind is a newer sluice's; a bad one is named). Until it has read
/// up to the end offset it found at start it is not ready (not_ready_reason, for /readyz); while
/// the cluster cannot be reached it keeps trying, saying why.
///
/// Lifecycle: construct (nothing runs), start() (its own io thread), destroy before the client
/// and the stores (stops the tail within a poll's wait). Concurrency: not_ready_reason from any
/// thread; the stores are changed from the mirror's thread through their own locks.
class security_mirror {
public:
    struct stores {
        auth::credential_store& users;
        auth::authorizer& acls;
        auth::client_quotas& quotas;
        auth::aws_key_store& aws_keys;
    };

    security_mirror(backend::api::client& client, stores into);
    ~security_mirror();
    security_mirror(const security_mirror&) = delete;
    security_mirror& operator=(const security_mirror&) = delete;

    void start();
    /// nullopt once caught up; else why not yet.
    std::optional<std::string> not_ready_reason() const;

private:
    boost::asio::awaitable<void> run();
    boost::asio::awaitable<bool> tail_once();
    void set_reason(std::string reason);
    void apply(std::string_view key, std::optional<std::string_view> value);
    void install();

    backend::api::client& client_;
    stores stores_;
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    std::thread thread_;
    std::atomic<bool> stopping_{false};
    std::promise<void> done_;        // set when run() has returned (its consumer closed)
    std::future<void> finished_;
    std::atomic<bool> caught_up_{false};
    mutable std::mutex reason_mutex_;
    std::string reason_ = "reading the users, ACLs, quotas and keys of _sluice_security";

    // The mirror's thread only.
    auth::security_snapshot state_;
    std::set<std::string, std::less<>> changed_users_;
    bool acls_changed_ = false;
    bool quotas_changed_ = false;
    bool keys_changed_ = false;
    std::int64_t resume_at_ = -1;  // where the next pass reads from (-1: the start)
};

}  // namespace sluice::gateway
