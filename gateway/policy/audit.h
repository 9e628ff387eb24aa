// The audit log (issue 12): one JSON object per line, in a file of its own (audit.log, default
// DATA_DIR/audit.log), for every denied request, every failed authentication and every change
// of users, ACLs or configs, on every front and from the `sluice users` / `sluice acls`
// commands. It has its own spdlog logger and rotating file sink, registered nowhere: neither
// --log-level nor --log-format touches it, and nothing of it reaches stderr.
//
//   {"time":"2026-12-03T11:27:09.123Z","event":"authorization_denied","principal":"User:bob",
//    "client":"127.0.0.1:5555","front":"kafka","operation":"WRITE","resource_type":"TOPIC",
//    "resource_name":"t","api":"Produce"}
//
// The fields always come in this order: time, event, principal, client, front, then the
// event's own (docs/security.md lists them). No password, token, proof, signature or secret
// value is ever a field: the callers pass names, and config values of secret-like keys are
// written as "<redacted>".
//
// The server's log is asynchronous: a call formats the line and queues it (a bounded queue,
// one writer thread); when the queue is full the oldest line is dropped and counted
// (sluice_audit_events_dropped_total), so a storm of denials never blocks an io thread on the
// disk. The writer flushes after every line, so a line is in the file moments after its event.
// The commands write synchronously.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auth/authorizer.h"

namespace spdlog {
class logger;
}

namespace sluice::auth {
struct quota_entity;
struct quota_op;
}  // namespace sluice::auth

namespace sluice::gateway {

class config;
class metrics_registry;

struct audit_settings {
    /// audit.log: the file; empty (or "off" in the setting) turns the audit log off.
    std::string path;
    /// audit.log.max.bytes: the size at which the file is rotated (audit.log.1, .2, ...).
    std::int64_t max_bytes = 104857600;
    /// audit.log.files: how many files are kept, the current one included.
    std::int32_t files = 5;
    /// Lines queued for the writer thread before the oldest is dropped.
    std::size_t queue_lines = 8192;
};

/// audit.log, audit.log.max.bytes, audit.log.files. Throws config_error for a bad value.
audit_settings read_audit_settings(const config& cfg);
/// The defaults for a data dir (the commands, which run without a server's configuration):
/// DATA_DIR/audit.log, or SLUICE_AUDIT_LOG when it is set ("off" or empty: off).
audit_settings audit_settings_for(const std::filesystem::path& data_dir);

/// Who did it and from where.
struct audit_source {
    std::string principal;  // "User:alice"; "User:ANONYMOUS" before authentication
    std::string client;     // "127.0.0.1:5555"; "local" for the commands
    std::string front;      // kafka, http, websocket, sse, sqs, cli
};

/// The front of an HTTP listener's route, as the audit log names it: websocket for /ws, sse for
/// the event streams, http for the rest.
std::string_view http_front_of(std::string_view pattern);
/// "ADDRESS:PORT" of a peer.
template <typename Endpoint>
std::string audit_client_of(const Endpoint& peer) {
    return peer.address().to_string() + ":" + std::to_string(peer.port());
}

/// The source of a `sluice users` / `sluice acls` command: "Local:<OS user>", local, cli.
audit_source command_audit_source();

/// The events, in the order of their counters.
enum class audit_event_kind {
    authorization_denied,
    authentication_failed,
    user_changed,
    acl_changed,
    config_changed,
};
std::string_view to_string(audit_event_kind k);

/// One line under construction: the common fields, then the event's own in call order.
class audit_event {
public:
    audit_event(audit_event_kind kind, const audit_source& source);

    audit_event& field(std::string_view key, std::string_view value);
    audit_event& list(std::string_view key, const std::vector<std::string>& values);
    /// `json` is already a JSON value (an object or an array built with the helpers).
    audit_event& raw(std::string_view key, std::string_view json);

    audit_event_kind kind() const { return kind_; }
    /// The line, without its newline.
    std::string line(std::chrono::system_clock::time_point time) const;

private:
    audit_event_kind kind_;
    std::string head_;    // ,"event":...,"front":"..."
    std::string fields_;  // ,"key":value...
};

/// Whether a config key's value must not be written: its name contains password, secret, key
/// or token (any case).
bool secret_like_key(std::string_view key);

/// The audit log of a process. Created by run_server (asynchronous) or a command (synchronous)
/// and installed with set_audit_log for the call sites; thread-safe.
class audit_log {
public:
    /// Opens (creating) the file; a disabled log (empty path) opens nothing and writes
    /// nothing. Throws config_error when the file cannot be opened.
    audit_log(const audit_settings& settings, bool asynchronous);
    ~audit_log();
    audit_log(const audit_log&) = delete;
    audit_log& operator=(const audit_log&) = delete;

    bool enabled() const { return logger_ != nullptr; }
    void write(const audit_event& e);
    /// Lines dropped because the writer's queue was full.
    std::uint64_t dropped() const;
    std::uint64_t events(audit_event_kind k) const;
    /// Asks the writer to flush (the destructor drains the queue and flushes).
    void flush();
    /// sluice_audit_events_total{event} and sluice_audit_events_dropped_total, at render time.
    void register_metrics(metrics_registry& metrics) const;

private:
    struct writer;
    std::shared_ptr<writer> writer_;
    std::shared_ptr<spdlog::logger> logger_;
    std::array<std::atomic<std::uint64_t>, 5> events_{};
};

/// The log the call sites below write to; null (the default) writes nothing. The caller keeps
/// the log alive until it installs null again.
void set_audit_log(audit_log* log);

/// Installs a log for the call sites for its own lifetime (run_server, the commands).
class scoped_audit_log {
public:
    explicit scoped_audit_log(audit_log& log) { set_audit_log(&log); }
    ~scoped_audit_log() { set_audit_log(nullptr); }
    scoped_audit_log(const scoped_audit_log&) = delete;
    scoped_audit_log& operator=(const scoped_audit_log&) = delete;
};

// The events. Each is one relaxed load when no audit log is installed.

/// `api`: the Kafka API ("Produce"), the HTTP route ("POST /topics/{topic}") or the SQS action.
void audit_authorization_denied(const audit_source& source, auth::acl_operation op,
                                auth::resource_type type, std::string_view name,
                                std::string_view api);
/// `user`: the claimed user name or access key id (never a password, token or signature).
void audit_authentication_failed(const audit_source& source, std::string_view mechanism,
                                 std::string_view user, std::string_view reason);
/// `mechanisms`: what the user has after the change (empty after a delete); `via`:
/// AlterUserScramCredentials or cli.
void audit_user_changed(const audit_source& source, std::string_view user, bool deleted,
                        const std::vector<std::string>& mechanisms, std::string_view via);
void audit_acl_changed(const audit_source& source, bool deleted,
                       const std::vector<auth::acl_binding>& bindings);

/// One changed key of a config: the operation (set, delete, append, subtract) and its value.
struct audit_config_change {
    std::string key;
    std::string op = "set";
    std::optional<std::string> value;
};
/// `resource`: "topic:NAME", "broker:0", "client-quota:user=alice"... Values of secret-like keys
/// are written as "<redacted>". For AlterConfigs, IncrementalAlterConfigs, AlterClientQuotas.
void audit_config_changed(const audit_source& source, std::string_view resource,
                          const std::vector<audit_config_change>& changes);

/// One entity's AlterClientQuotas ops (from the request or `sluice quotas`), as a
/// config_changed event of resource "client-quota:user=alice, client-id=<default>".
void audit_client_quotas_changed(const audit_source& source, const auth::quota_entity& entity,
                                 const std::vector<auth::quota_op>& ops);

}  // namespace sluice::gateway
