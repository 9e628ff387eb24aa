#include "gateway/policy/audit.h"

#include <cctype>
#include <cstdlib>
#include <ctime>

#include <pwd.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/async_logger.h>
#include <spdlog/details/thread_pool.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/rotating_file_sink.h>

#include "auth/client_quotas.h"
#include "gateway/core/config.h"
#include "gateway/core/logging.h"
#include "gateway/core/metrics.h"

namespace sluice::gateway {
namespace {

constexpr std::array<audit_event_kind, 5> all_audit_event_kinds = {
    audit_event_kind::authorization_denied, audit_event_kind::authentication_failed,
    audit_event_kind::user_changed, audit_event_kind::acl_changed,
    audit_event_kind::config_changed};

std::atomic<audit_log*> installed_audit_log{nullptr};

void append_audit_key(std::string& out, std::string_view key) {
    out.push_back(',');
    append_json_string(out, key);
    out.push_back(':');
}

std::string audit_json_string(std::string_view s) {
    std::string out;
    append_json_string(out, s);
    return out;
}

std::string audit_binding_json(const auth::acl_binding& b) {
    std::string out = "{\"resource_type\":" + audit_json_string(auth::to_string(b.type));
    out += ",\"resource_name\":" + audit_json_string(b.name);
    out += ",\"pattern\":" + audit_json_string(auth::to_string(b.pattern));
    out += ",\"principal\":" + audit_json_string(b.principal);
    out += ",\"host\":" + audit_json_string(b.host);
    out += ",\"operation\":" + audit_json_string(auth::to_string(b.operation));
    out += ",\"permission\":" + audit_json_string(auth::to_string(b.permission)) + "}";
    return out;
}

}  // namespace

std::string_view to_string(audit_event_kind k) {
    switch (k) {
        case audit_event_kind::authorization_denied: return "authorization_denied";
        case audit_event_kind::authentication_failed: return "authentication_failed";
        case audit_event_kind::user_changed: return "user_changed";
        case audit_event_kind::acl_changed: return "acl_changed";
        case audit_event_kind::config_changed: return "config_changed";
    }
    return "unknown";
}

audit_settings read_audit_settings(const config& cfg) {
    audit_settings s;
    s.path = cfg.get_string("audit.log", (cfg.data_dir / "audit.log").string());
    if (s.path == "off") {
        s.path.clear();
    }
    s.max_bytes = cfg.get_int("audit.log.max.bytes", s.max_bytes);
    if (s.max_bytes < 1024) {
        throw config_error(cfg.explain("audit.log.max.bytes: must be at least 1024"));
    }
    const auto files = cfg.get_int("audit.log.files", s.files);
    if (files < 1 || files > 1000) {
        throw config_error(cfg.explain("audit.log.files: must be 1..1000"));
    }
    s.files = static_cast<std::int32_t>(files);
    return s;
}

audit_settings audit_settings_for(const std::filesystem::path& data_dir) {
    audit_settings s;
    const char* env = std::getenv("SLUICE_AUDIT_LOG");
    s.path = env != nullptr ? std::string(env) : (data_dir / "audit.log").string();
    if (s.path == "off") {
        s.path.clear();
    }
    return s;
}

std::string_view http_front_of(std::string_view pattern) {
    if (pattern == "/ws") {
        return "websocket";
    }
    return pattern.ends_with("/events") ? "sse" : "http";
}

audit_source command_audit_source() {
    std::string user = std::to_string(::geteuid());
    if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_name != nullptr) {
        user = pw->pw_name;
    }
    return audit_source{"Local:" + user, "local", "cli"};
}

audit_event::audit_event(audit_event_kind kind, const audit_source& source) : kind_(kind) {
    append_audit_key(head_, "event");
    append_json_string(head_, to_string(kind));
    append_audit_key(head_, "principal");
    append_json_string(head_, source.principal);
    append_audit_key(head_, "client");
    append_json_string(head_, source.client);
    append_audit_key(head_, "front");
    append_json_string(head_, source.front);
}

audit_event& audit_event::field(std::string_view key, std::string_view value) {
    append_audit_key(fields_, key);
    append_json_string(fields_, value);
    return *this;
}

audit_event& audit_event::list(std::string_view key, const std::vector<std::string>& values) {
    append_audit_key(fields_, key);
    fields_.push_back('[');
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i > 0) {
            fields_.push_back(',');
        }
        append_json_string(fields_, values[i]);
    }
    fields_.push_back(']');
    return *this;
}

audit_event& audit_event::raw(std::string_view key, std::string_view json) {
    append_audit_key(fields_, key);
    fields_.append(json);
    return *this;
}

std::string audit_event::line(std::chrono::system_clock::time_point time) const {
    using namespace std::chrono;
    const auto t = system_clock::to_time_t(time);
    std::tm utc{};
    gmtime_r(&t, &utc);
    const auto ms = duration_cast<milliseconds>(time.time_since_epoch()).count() % 1000;
    std::string out = fmt::format("{{\"time\":\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z\"",
                                  utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                                  utc.tm_min, utc.tm_sec, ms);
    out += head_;
    out += fields_;
    out.push_back('}');
    return out;
}

bool secret_like_key(std::string_view key) {
    std::string lower(key);
    for (auto& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    for (const char* word : {"password", "secret", "key", "token"}) {
        if (lower.find(word) != std::string::npos) {
            return true;
        }
    }
    return false;
}

/// The writer thread of an asynchronous log; the async logger refers to it weakly, so it must
/// outlive the logger's last queued line (its destructor drains the queue).
struct audit_log::writer {
    std::shared_ptr<spdlog::details::thread_pool> pool;
};

audit_log::audit_log(const audit_settings& settings, bool asynchronous) {
    if (settings.path.empty()) {
        return;
    }
    std::shared_ptr<spdlog::sinks::rotating_file_sink_mt> sink;
    try {
        // spdlog counts the rotated files besides the current one.
        sink = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
            settings.path, static_cast<std::size_t>(settings.max_bytes),
            static_cast<std::size_t>(settings.files - 1));
    } catch (const spdlog::spdlog_ex& e) {
        throw config_error("audit.log: cannot open '" + settings.path + "': " + e.what());
    }
    sink->set_formatter(std::make_unique<spdlog::pattern_formatter>("%v"));
    if (asynchronous) {
        writer_ = std::make_shared<writer>();
        writer_->pool = std::make_shared<spdlog::details::thread_pool>(settings.queue_lines, 1);
        logger_ = std::make_shared<spdlog::async_logger>(
            "audit", sink, writer_->pool, spdlog::async_overflow_policy::overrun_oldest);
    } else {
        logger_ = std::make_shared<spdlog::logger>("audit", sink);
    }
    logger_->set_level(spdlog::level::info);
    // In the asynchronous log the flush is the writer thread's: the caller only queues.
    logger_->flush_on(spdlog::level::info);
}

audit_log::~audit_log() {
    if (logger_) {
        logger_->flush();
    }
    logger_.reset();
    writer_.reset();  // joins the writer after the lines still queued
}

void audit_log::write(const audit_event& e) {
    if (!logger_) {
        return;
    }
    events_[static_cast<std::size_t>(e.kind())].fetch_add(1, std::memory_order_relaxed);
    const std::string line = e.line(std::chrono::system_clock::now());
    logger_->info(std::string_view(line));
}

std::uint64_t audit_log::dropped() const {
    return writer_ && writer_->pool ? writer_->pool->overrun_counter() : 0;
}

std::uint64_t audit_log::events(audit_event_kind k) const {
    return events_[static_cast<std::size_t>(k)].load(std::memory_order_relaxed);
}

void audit_log::flush() {
    if (logger_) {
        logger_->flush();
    }
}

void audit_log::register_metrics(metrics_registry& metrics) const {
    metrics.add_collector([this](std::string& out) {
        out += "# HELP sluice_audit_events_total Events written to the audit log\n"
               "# TYPE sluice_audit_events_total counter\n";
        for (const auto k : all_audit_event_kinds) {
            out += fmt::format("sluice_audit_events_total{{event=\"{}\"}} {}\n", to_string(k),
                               events(k));
        }
        out += "# HELP sluice_audit_events_dropped_total Audit lines dropped because the "
               "writer's queue was full\n"
               "# TYPE sluice_audit_events_dropped_total counter\n";
        out += fmt::format("sluice_audit_events_dropped_total {}\n", dropped());
    });
}

void set_audit_log(audit_log* log) {
    // A disabled log is not installed: the call sites then stop at one load.
    installed_audit_log.store(log != nullptr && log->enabled() ? log : nullptr,
                              std::memory_order_release);
}

namespace {

void audit_emit(const audit_event& e) {
    if (audit_log* log = installed_audit_log.load(std::memory_order_acquire); log != nullptr) {
        log->write(e);
    }
}

bool audit_log_installed() {
    return installed_audit_log.load(std::memory_order_acquire) != nullptr;
}

}  // namespace

void audit_authorization_denied(const audit_source& source, auth::acl_operation op,
                                auth::resource_type type, std::string_view name,
                                std::string_view api) {
    if (!audit_log_installed()) {
        return;
    }
    audit_event e(audit_event_kind::authorization_denied, source);
    e.field("operation", auth::to_string(op))
        .field("resource_type", auth::to_string(type))
        .field("resource_name", name)
        .field("api", api);
    audit_emit(e);
}

void audit_authentication_failed(const audit_source& source, std::string_view mechanism,
                                 std::string_view user, std::string_view reason) {
    if (!audit_log_installed()) {
        return;
    }
    audit_event e(audit_event_kind::authentication_failed, source);
    e.field("mechanism", mechanism).field("user", user).field("reason", reason);
    audit_emit(e);
}

void audit_user_changed(const audit_source& source, std::string_view user, bool deleted,
                        const std::vector<std::string>& mechanisms, std::string_view via) {
    if (!audit_log_installed()) {
        return;
    }
    audit_event e(audit_event_kind::user_changed, source);
    e.field("user", user)
        .field("action", deleted ? "delete" : "set")
        .list("mechanisms", mechanisms)
        .field("via", via);
    audit_emit(e);
}

void audit_acl_changed(const audit_source& source, bool deleted,
                       const std::vector<auth::acl_binding>& bindings) {
    if (!audit_log_installed() || bindings.empty()) {
        return;
    }
    std::string list = "[";
    for (std::size_t i = 0; i < bindings.size(); ++i) {
        list += (i > 0 ? "," : "") + audit_binding_json(bindings[i]);
    }
    list += "]";
    audit_event e(audit_event_kind::acl_changed, source);
    e.field("action", deleted ? "delete" : "create").raw("bindings", list);
    audit_emit(e);
}

void audit_config_changed(const audit_source& source, std::string_view resource,
                          const std::vector<audit_config_change>& changes) {
    if (!audit_log_installed()) {
        return;
    }
    std::string list = "[";
    for (std::size_t i = 0; i < changes.size(); ++i) {
        const auto& c = changes[i];
        list += (i > 0 ? ",{\"key\":" : "{\"key\":") + audit_json_string(c.key);
        list += ",\"op\":" + audit_json_string(c.op);
        if (c.value) {
            const bool secret = secret_like_key(c.key);
            list += ",\"value\":" + audit_json_string(secret ? "<redacted>" : *c.value);
        }
        list += "}";
    }
    list += "]";
    audit_event e(audit_event_kind::config_changed, source);
    e.field("resource", resource).raw("changes", list);
    audit_emit(e);
}

void audit_client_quotas_changed(const audit_source& source, const auth::quota_entity& entity,
                                 const std::vector<auth::quota_op>& ops) {
    std::vector<audit_config_change> changes;
    for (const auto& op : ops) {
        audit_config_change c;
        c.key = op.key;
        c.op = op.remove ? "delete" : "set";
        if (!op.remove) {
            c.value = std::to_string(op.value);
        }
        changes.push_back(std::move(c));
    }
    audit_config_changed(source, "client-quota:" + auth::describe(entity), changes);
}

}  // namespace sluice::gateway
