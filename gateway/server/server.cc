#include "gateway/server/server.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#ifdef SLUICE_MIMALLOC
#include <mimalloc.h>
#endif

#include "auth/authorizer.h"
#include "auth/client_quotas.h"
#include "auth/aws_key_store.h"
#include "auth/credential_store.h"
#include "auth/failure_limiter.h"
#include "auth/sasl/sasl_server.h"
#include "backend/group/group_records.h"
#include "backend/io/sync_latency.h"
#include "backend/native/native_backend.h"
#include "gateway/httpcore/body_budget.h"
#include "gateway/http/group_routes.h"
#include "gateway/http/http_server.h"
#include "gateway/http/http_settings.h"
#include "gateway/kafka/config_view.h"
#include "gateway/kafka/dynamic_configs.h"
#include "gateway/kafka/listener.h"
#include "gateway/core/logger.h"
#include "gateway/policy/auth_settings.h"
#include "gateway/policy/audit.h"
#include "gateway/core/data_dir_lock.h"
#include "gateway/core/backend_metrics.h"
#include "gateway/core/logging.h"
#include "gateway/core/process_metrics.h"
#include "gateway/policy/quota_meter.h"
#include "gateway/core/connection_tracker.h"
#include "gateway/core/io_pool.h"
#include "gateway/core/listening_sockets.h"
#include "gateway/core/metrics.h"
#include "gateway/core/request_budget.h"
#include "gateway/kafka/services.h"
#include "gateway/core/tls_settings.h"
#include "gateway/sqs/sqs_server.h"
#include "protocol/core/uuid.h"

namespace sluice::gateway {
namespace asio = boost::asio;

namespace {

/// The allocator the process runs on, for the start-up line: mimalloc in the executable's
/// normal builds (gateway/CMakeLists.txt), the C library's in sanitizer builds.
std::string memory_allocator() {
#ifdef SLUICE_MIMALLOC
    const int v = mi_version();  // 209 for 2.0.9
    return fmt::format("mimalloc {}.{}.{}", v / 100, v / 10 % 10, v % 10);
#else
    return "the C library's malloc";
#endif
}

/// What `load` returns: one of the data dir's state files (users, ACLs, quotas, keys), read at
/// start; a file that cannot be read or parsed stops start-up naming `what` and the file.
template <typename Load>
auto load_state(const char* what, Load load) {
    try {
        return load();
    } catch (const std::runtime_error& e) {
        throw config_error(std::string(what) + ": " + e.what());
    }
}

/// The cluster id, kept in DATA_DIR/meta.properties (as Kafka does) so it survives restarts.
std::string load_or_create_cluster_id(const std::filesystem::path& dir) {
    const auto path = dir / "meta.properties";
    if (std::filesystem::exists(path)) {
        auto props = read_properties_file(path);
        if (auto it = props.find("cluster.id"); it != props.end() && !it->second.empty()) {
            return it->second;
        }
    }
    const std::string id = uuid::random().to_base64();
    const auto tmp = dir / "meta.properties.tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << "# Written by sluice on first start; do not edit.\n"
            << "version=1\ncluster.id=" << id << "\nnode.id=0\n";
        out.flush();
        if (!out) {
            throw config_error("--data-dir: cannot write " + tmp.string());
        }
    }
    std::filesystem::rename(tmp, path);
    return id;
}

/// What a start creates on disk, removed again when the start fails, so that a failed start
/// leaves nothing behind: the data dir when it did not exist (with the folders above it that
/// did not exist either), and the audit log when it did not exist. Records what exists when
/// built (before anything is created); disarm() once sluice serves.
class start_cleanup {
public:
    start_cleanup(const std::filesystem::path& data_dir, const std::string& audit_path) {
        namespace fs = std::filesystem;
        std::error_code ec;
        fs::path dir = fs::absolute(data_dir, ec).lexically_normal();
        if (!ec && dir.filename().empty()) {
            dir = dir.parent_path();  // "data/"
        }
        while (!ec && !dir.empty() && missing(dir)) {
            created_dir_ = dir;
            if (dir.parent_path() == dir) {
                break;
            }
            dir = dir.parent_path();
        }
        if (!audit_path.empty() && missing(audit_path)) {
            created_audit_ = audit_path;
        }
    }
    start_cleanup(const start_cleanup&) = delete;
    start_cleanup& operator=(const start_cleanup&) = delete;

    ~start_cleanup() {
        if (!armed_) {
            return;
        }
        std::error_code ec;
        if (!created_audit_.empty()) {
            std::filesystem::remove(created_audit_, ec);
        }
        if (!created_dir_.empty() && locked_) {
            std::filesystem::remove_all(created_dir_, ec);
        }
    }

    /// The data dir is locked by this process: when it is new, it is this start's to remove.
    /// (Until then another sluice starting on the same new path may have made it.)
    void locked() { locked_ = true; }
    void disarm() { armed_ = false; }

private:
    /// True only when `path` surely does not exist (not for an error such as EACCES).
    static bool missing(const std::filesystem::path& path) {
        struct stat st {};
        return ::lstat(path.c_str(), &st) != 0 && errno == ENOENT;
    }

    std::filesystem::path created_dir_;
    std::filesystem::path created_audit_;
    bool armed_ = true;
    bool locked_ = false;
};

/// One warning when an existing data dir is open to other users: sluice creates it 0700 and its
/// files 0600 (docs/operations.md#the-data-directory), but leaves the modes of one it did not
/// create as they are.
void warn_if_data_dir_is_open(const std::filesystem::path& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || (st.st_mode & 077) == 0) {
        return;
    }
    server_log().warn("data dir {} is open to other users (mode {:04o}); sluice makes its own "
                      "data dirs 0700 and files 0600: chmod 700 it to keep topic data, users and "
                      "the audit log private",
                      dir.string(), st.st_mode & 07777);
}

/// Raises RLIMIT_NOFILE to the hard limit: every connection and open segment is a descriptor.
void raise_open_files_limit() {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &lim) == 0) {
            server_log().info("open files limit raised to {}", lim.rlim_cur);
        }
    }
}

/// sasl.enabled.mechanisms: a comma list of Kafka's mechanism names (default all we have).
std::vector<std::string> read_sasl_mechanisms(const config& cfg) {
    const std::string text =
        cfg.get_string("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512");
    const auto& supported = auth::supported_sasl_mechanisms();
    std::vector<std::string> out;
    for (const auto& name : split_comma_list(text)) {
        if (name == "GSSAPI") {
            throw config_error("sasl.enabled.mechanisms: " + name + " is not yet supported");
        }
        if (std::find(supported.begin(), supported.end(), name) == supported.end()) {
            throw config_error("sasl.enabled.mechanisms: unknown mechanism '" + name +
                               "' (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)");
        }
        if (std::find(out.begin(), out.end(), name) == out.end()) {
            out.push_back(name);
        }
    }
    if (out.empty()) {
        throw config_error("sasl.enabled.mechanisms: name at least one mechanism");
    }
    return out;
}

kafka_settings read_kafka_settings(const config& cfg, const std::string& cluster_id) {
    kafka_settings k;
    k.cluster_id = cluster_id;
    k.node_id = static_cast<std::int32_t>(cfg.get_int("node.id", cfg.get_int("broker.id", 0)));
    if (cfg.advertise_kafka) {
        k.advertised = *cfg.advertise_kafka;
    } else {
        k.advertised = endpoint{"", 0, true};
    }
    k.auto_create_topics = cfg.get_bool("auto.create.topics.enable", true);
    k.num_partitions = static_cast<std::int32_t>(cfg.get_int("num.partitions", 1));
    if (k.num_partitions < 1) {
        throw config_error("num.partitions: must be at least 1");
    }
    k.max_request_bytes = cfg.get_int("socket.request.max.bytes", 104857600);
    if (k.max_request_bytes < 1024) {
        throw config_error("socket.request.max.bytes: must be at least 1024");
    }
    k.idle_timeout_ms = cfg.get_int("connections.max.idle.ms", 600000);
    k.max_in_flight = static_cast<std::int32_t>(cfg.get_int("max.in.flight.requests", 64));
    k.delete_topic_enable = cfg.get_bool("delete.topic.enable", true);
    k.fetch_response_max_bytes = cfg.get_int("fetch.response.max.bytes", -1);
    if (k.fetch_response_max_bytes < -1) {
        throw config_error("fetch.response.max.bytes: must be -1 (adaptive), 0 (off) or a size");
    }
    k.queued_max_request_bytes = cfg.get_int("queued.max.request.bytes", 268435456);
    if (k.queued_max_request_bytes < -1 || k.queued_max_request_bytes == 0) {
        throw config_error("queued.max.request.bytes: must be -1 (no bound) or a positive size");
    }
    const std::int64_t queued_requests = cfg.get_int("queued.max.requests", 500);
    if (queued_requests < 1 || queued_requests > 2147483647) {
        throw config_error("queued.max.requests: must be between 1 and 2147483647");
    }
    k.queued_max_requests = static_cast<std::int32_t>(queued_requests);
    k.sasl_mechanisms = read_sasl_mechanisms(cfg);
    k.max_reauth_ms = cfg.get_int("connections.max.reauth.ms", 0);
    if (k.max_reauth_ms < 0) {
        throw config_error("connections.max.reauth.ms: must be 0 (off) or a positive time");
    }
    return k;
}

/// The group coordinator's settings (Kafka's names; docs/consumer-groups.md).
backend::group::coordinator_config read_group_settings(const config& cfg) {
    backend::group::coordinator_config g;
    auto int_setting = [&](const char* key, std::int64_t fallback, std::int64_t min,
                           std::int64_t max) {
        const std::int64_t v = cfg.get_int(key, fallback);
        if (v < min || v > max) {
            throw config_error(std::string(key) + ": must be between " + std::to_string(min) +
                               " and " + std::to_string(max));
        }
        return v;
    };
    constexpr std::int64_t int_max = 2147483647;
    g.min_session_timeout_ms = static_cast<std::int32_t>(
        int_setting("group.min.session.timeout.ms", g.min_session_timeout_ms, 1, int_max));
    g.max_session_timeout_ms = static_cast<std::int32_t>(int_setting(
        "group.max.session.timeout.ms", g.max_session_timeout_ms, g.min_session_timeout_ms,
        int_max));
    g.initial_rebalance_delay_ms = static_cast<std::int32_t>(int_setting(
        "group.initial.rebalance.delay.ms", g.initial_rebalance_delay_ms, 0, int_max));
    g.max_size = static_cast<std::int32_t>(int_setting("group.max.size", g.max_size, 1, int_max));
    g.offsets_retention_ms =
        int_setting("offsets.retention.minutes", g.offsets_retention_ms / 60000, 1,
                    int_max) * 60000;
    g.offsets_retention_check_interval_ms =
        int_setting("offsets.retention.check.interval.ms",
                    g.offsets_retention_check_interval_ms, 1, int_max);
    // At most what a record of __consumer_offsets holds (an int16-length string).
    g.offset_metadata_max_bytes = static_cast<std::int32_t>(int_setting(
        "offset.metadata.max.bytes", g.offset_metadata_max_bytes, 0,
        static_cast<std::int64_t>(backend::group::max_record_metadata_bytes)));
    g.offsets_topic_partitions = static_cast<std::int32_t>(int_setting(
        "offsets.topic.num.partitions", g.offsets_topic_partitions, 1, 1000));
    g.offsets_topic_segment_bytes = static_cast<std::int32_t>(int_setting(
        "offsets.topic.segment.bytes", g.offsets_topic_segment_bytes, 1048576, int_max));
    g.consumer_heartbeat_interval_ms = static_cast<std::int32_t>(int_setting(
        "group.consumer.heartbeat.interval.ms", g.consumer_heartbeat_interval_ms, 1, int_max));
    g.consumer_session_timeout_ms = static_cast<std::int32_t>(int_setting(
        "group.consumer.session.timeout.ms", g.consumer_session_timeout_ms, 1, int_max));
    g.consumer_max_size = static_cast<std::int32_t>(
        int_setting("group.consumer.max.size", g.consumer_max_size, 1, int_max));
    // The bounds of the groups' own configs (consumer.session.timeout.ms and
    // consumer.heartbeat.interval.ms on a GROUP resource).
    g.consumer_min_session_timeout_ms = static_cast<std::int32_t>(int_setting(
        "group.consumer.min.session.timeout.ms", g.consumer_min_session_timeout_ms, 1, int_max));
    g.consumer_max_session_timeout_ms = static_cast<std::int32_t>(
        int_setting("group.consumer.max.session.timeout.ms", g.consumer_max_session_timeout_ms,
                    g.consumer_min_session_timeout_ms, int_max));
    g.consumer_min_heartbeat_interval_ms = static_cast<std::int32_t>(
        int_setting("group.consumer.min.heartbeat.interval.ms",
                    g.consumer_min_heartbeat_interval_ms, 1, int_max));
    g.consumer_max_heartbeat_interval_ms = static_cast<std::int32_t>(
        int_setting("group.consumer.max.heartbeat.interval.ms",
                    g.consumer_max_heartbeat_interval_ms, g.consumer_min_heartbeat_interval_ms,
                    int_max));
    const std::string assignors = cfg.get_string("group.consumer.assignors", "uniform,range");
    g.consumer_assignors.clear();
    std::size_t start = 0;
    while (start <= assignors.size()) {
        std::size_t end = assignors.find(',', start);
        if (end == std::string::npos) {
            end = assignors.size();
        }
        std::string name = assignors.substr(start, end - start);
        name.erase(0, name.find_first_not_of(" \t"));
        name.erase(name.find_last_not_of(" \t") + 1);
        if (!name.empty()) {
            if (!backend::group::known_assignor(name)) {
                throw config_error("group.consumer.assignors: unknown assignor '" + name +
                                   "' (uniform, range)");
            }
            g.consumer_assignors.push_back(name);
        }
        start = end + 1;
    }
    if (g.consumer_assignors.empty()) {
        throw config_error("group.consumer.assignors: name at least one assignor");
    }
    return g;
}

/// Idempotent-producer state settings (Kafka's names; docs/transactions.md).
backend::producer::producer_state_settings read_producer_settings(const config& cfg) {
    backend::producer::producer_state_settings p;
    auto positive = [&](const char* key, std::int64_t fallback) {
        const std::int64_t v = cfg.get_int(key, fallback);
        if (v < 1) {
            throw config_error(std::string(key) + ": must be positive");
        }
        return v;
    };
    p.producer_id_expiration_ms = positive("producer.id.expiration.ms", p.producer_id_expiration_ms);
    p.expiration_check_interval_ms = positive("producer.id.expiration.check.interval.ms",
                                              p.expiration_check_interval_ms);
    p.snapshot_interval_ms = positive("producer.state.snapshot.interval.ms", p.snapshot_interval_ms);
    return p;
}

/// Transaction coordinator settings (Kafka's names; docs/transactions.md).
backend::producer::txn_settings read_txn_settings(const config& cfg) {
    backend::producer::txn_settings t;
    auto positive = [&](const char* key, std::int64_t fallback, std::int64_t max) {
        const std::int64_t v = cfg.get_int(key, fallback);
        if (v < 1 || v > max) {
            throw config_error(std::string(key) + ": must be between 1 and " + std::to_string(max));
        }
        return v;
    };
    constexpr std::int64_t int_max = 2147483647;
    t.max_timeout_ms = static_cast<std::int32_t>(
        positive("transaction.max.timeout.ms", t.max_timeout_ms, int_max));
    t.id_expiration_ms = positive("transactional.id.expiration.ms", t.id_expiration_ms, int_max);
    t.abort_check_interval_ms =
        positive("transaction.abort.timed.out.transaction.cleanup.interval.ms",
                 t.abort_check_interval_ms, int_max);
    t.expiry_check_interval_ms =
        positive("transaction.remove.expired.transaction.cleanup.interval.ms",
                 t.expiry_check_interval_ms, int_max);
    t.state_log_partitions = static_cast<std::int32_t>(
        positive("transaction.state.log.num.partitions", t.state_log_partitions, 1000));
    t.state_log_segment_bytes = static_cast<std::int32_t>(
        positive("transaction.state.log.segment.bytes", t.state_log_segment_bytes, int_max));
    const std::int64_t tv = cfg.get_int("transaction.version", t.transaction_version);
    if (tv < 0 || tv > 2) {
        throw config_error("transaction.version: must be 0, 1 or 2");
    }
    t.transaction_version = static_cast<std::int16_t>(tv);
    return t;
}

/// The SQS front's and the queues' settings (docs/configuration.md, sqs.*).
struct sqs_config {
    sqs::sqs_settings front;
    backend::queue::queue_settings queues;
    std::int64_t state_segment_bytes = 64 << 20;
    bool sigv4 = false;  // sqs.authentication
};

sqs_config read_sqs_settings(const config& cfg) {
    sqs_config s;
    auto int_setting = [&](const char* key, std::int64_t fallback, std::int64_t min,
                           std::int64_t max) {
        const std::int64_t v = cfg.get_int(key, fallback);
        if (v < min || v > max) {
            throw config_error(std::string(key) + ": must be between " + std::to_string(min) +
                               " and " + std::to_string(max));
        }
        return v;
    };
    const std::string sqs_auth = cfg.get_string("sqs.authentication", "none");
    if (sqs_auth != "none" && sqs_auth != "sigv4") {
        throw config_error("sqs.authentication: must be none or sigv4");
    }
    s.sigv4 = sqs_auth == "sigv4";
    s.front.region = cfg.get_string("sqs.region", s.front.region);
    s.front.account = cfg.get_string("sqs.account.id", s.front.account);
    if (s.front.account.size() != 12 ||
        s.front.account.find_first_not_of("0123456789") != std::string::npos) {
        throw config_error("sqs.account.id: must be 12 digits");
    }
    if (s.front.region.empty() || s.front.region.find_first_of(":/ ") != std::string::npos) {
        throw config_error("sqs.region: must be a region name such as us-east-1");
    }
    s.front.advertised_url = cfg.get_string("sqs.advertised.url", "");
    while (!s.front.advertised_url.empty() && s.front.advertised_url.back() == '/') {
        s.front.advertised_url.pop_back();
    }
    if (!s.front.advertised_url.empty() && !s.front.advertised_url.starts_with("http://") &&
        !s.front.advertised_url.starts_with("https://")) {
        throw config_error("sqs.advertised.url: must start with http:// or https://");
    }
    s.front.origins.allow_origins = read_allowed_origins(cfg);
    if (auto own = origin_of_url(s.front.advertised_url)) {
        s.front.origins.own_origins.push_back(std::move(*own));
    }
    auto& q = s.queues;
    q.arns.region = s.front.region;
    q.arns.account = s.front.account;
    q.sender_id = s.front.account;
    q.partitions = static_cast<std::int32_t>(int_setting("sqs.queue.partitions", 1, 1, 1000));
    q.limits.read_ahead_bytes = static_cast<std::size_t>(
        int_setting("sqs.read.ahead.bytes", 64 << 20, 1 << 20, std::int64_t{1} << 40));
    q.limits.read_ahead_messages = static_cast<std::size_t>(
        int_setting("sqs.read.ahead.messages", 100000, 10, 100000000));
    q.limits.max_in_flight = static_cast<std::size_t>(
        int_setting("sqs.max.inflight.messages", 120000, 1, 100000000));
    q.deleted_name_reuse_ms = int_setting("sqs.deleted.name.reuse.ms", 60000, 0, 86400000);
    q.purge_interval_ms = int_setting("sqs.purge.interval.ms", 60000, 0, 86400000);
    s.state_segment_bytes =
        int_setting("sqs.state.segment.bytes", 64 << 20, 1 << 20, std::int64_t{1} << 34);
    return s;
}

/// The native backend's options from the configuration (Kafka's names; docs/configuration.md).
backend::native::native_options read_native_options(const config& cfg) {
    backend::native::native_options o;
    o.log.data_dir = cfg.data_dir.string();
    std::string why;
    auto defaults = backend::log::broker_defaults(cfg.properties, &why);
    if (!defaults) {
        throw config_error(why.empty() ? defaults.error().message() : why);
    }
    o.log.defaults = *defaults;
    for (auto key : backend::log::broker_default_keys()) {
        cfg.mark_known(key);
    }
    auto interval = [&](const char* key, std::chrono::milliseconds fallback) {
        const std::int64_t v = cfg.get_int(key, fallback.count());
        if (v < 0) {
            throw config_error(std::string(key) + ": must be 0 (never) or a positive number of ms");
        }
        return std::chrono::milliseconds(v);
    };
    o.log.retention_check_interval =
        interval("log.retention.check.interval.ms", o.log.retention_check_interval);
    o.log.compaction_check_interval =
        interval("log.cleaner.backoff.ms", o.log.compaction_check_interval);
    o.log.recovery_progress_interval =
        interval("log.recovery.progress.interval.ms", o.log.recovery_progress_interval);
    o.properties = cfg.properties;
    o.groups = read_group_settings(cfg);
    o.producers = read_producer_settings(cfg);
    o.transactions = read_txn_settings(cfg);
    return o;
}

}  // namespace

int run_server(const config& cfg) {
    configure_logging(parse_log_levels(cfg.log_level), parse_log_format(cfg.log_format));
    auto& log = server_log();
    // A peer that closes its connection while a response is sent with sendfile (which has no
    // MSG_NOSIGNAL) would kill the process with SIGPIPE; the write fails with EPIPE instead.
    std::signal(SIGPIPE, SIG_IGN);

    // TLS contexts are built (and their files checked) before the data dir is touched.
    read_tls_settings(cfg, "ssl");  // the TLS keys are known even without a TLS listener
    std::vector<std::shared_ptr<auth::tls_context_holder>> kafka_tls(cfg.kafka.size());
    std::vector<std::pair<std::string, std::shared_ptr<auth::tls_context_holder>>> reloadable;
    for (std::size_t i = 0; i < cfg.kafka.size(); ++i) {
        const auto& l = cfg.kafka[i];
        if (l.protocol == security_protocol::ssl || l.protocol == security_protocol::sasl_ssl) {
            kafka_tls[i] = open_tls_listener_context(cfg, tls_listener_name(l.protocol),
                                                     "Kafka listener " + l.to_string());
            reloadable.emplace_back("Kafka listener " + l.to_string(), kafka_tls[i]);
        }
    }
    // HTTPS: listener.name.https.ssl.* for --http, listener.name.sqs.ssl.* for --sqs.
    std::shared_ptr<auth::tls_context_holder> http_tls;
    std::shared_ptr<auth::tls_context_holder> sqs_tls;
    if (cfg.http.enabled && cfg.http_tls) {
        const std::string what = "HTTP listener https://" + cfg.http.to_string();
        http_tls = open_tls_listener_context(cfg, "https", what);
        reloadable.emplace_back(what, http_tls);
    }
    if (cfg.sqs.enabled && cfg.sqs_tls) {
        const std::string what = "SQS listener https://" + cfg.sqs.to_string();
        sqs_tls = open_tls_listener_context(cfg, "sqs", what);
        reloadable.emplace_back(what, sqs_tls);
    }
    // Every setting is read (and checked) before anything starts or the data dir is touched;
    // then a setting nobody read is a mistake: refuse to start, naming it.
    backend::native::native_options native_opts = read_native_options(cfg);
    kafka_settings kafka_cfg = read_kafka_settings(cfg, "");
    http_settings http_cfg = read_http_settings(cfg);
    const sqs_config sqs_cfg = read_sqs_settings(cfg);
    const auto tokens = read_jwt_verifier(cfg);
    const auth::authorizer_settings authz_settings = read_authorizer_settings(cfg);
    const audit_settings audit_cfg = read_audit_settings(cfg);
    const auth::quota_settings quota_cfg = read_quota_settings(cfg);
    native_opts.queues = sqs_cfg.queues;
    native_opts.queue_state_segment_bytes = sqs_cfg.state_segment_bytes;
    const auto ignored = cfg.reject_unknown();
    if (!ignored.empty()) {
        log.warn("{}", ignored_variables_warning(ignored));
        for (const auto& v : ignored) {
            native_opts.properties.erase(v.key);
        }
    }

    const bool any_sasl = std::any_of(cfg.kafka.begin(), cfg.kafka.end(), [](const auto& l) {
        return l.protocol == security_protocol::sasl_plaintext ||
               l.protocol == security_protocol::sasl_ssl;
    });
    const auto& mechs = kafka_cfg.sasl_mechanisms;
    if (any_sasl && !tokens &&
        std::find(mechs.begin(), mechs.end(), "OAUTHBEARER") != mechs.end()) {
        throw config_error("sasl.enabled.mechanisms: OAUTHBEARER needs "
                           "sasl.oauthbearer.jwks.location or "
                           "sasl.oauthbearer.public.key.locations");
    }
    if (http_cfg.authentication.bearer && !tokens) {
        throw config_error("http.authentication: bearer needs sasl.oauthbearer.jwks.location or "
                           "sasl.oauthbearer.public.key.locations");
    }

    // Every listener's port is bound before anything is created on disk, so that a port in use
    // stops the start with nothing made; the fronts take these sockets below.
    listening_sockets bound;
    for (const auto& l : cfg.kafka) {
        bound.bind(l.where, "--kafka");
    }
    if (cfg.http.enabled) {
        bound.bind(cfg.http, "--http");
    }
    if (cfg.sqs.enabled) {
        bound.bind(cfg.sqs, "--sqs");
    }

    // From here on a failed start removes the data dir and the audit log it created.
    start_cleanup cleanup(cfg.data_dir, audit_cfg.path);
    warn_if_data_dir_is_open(cfg.data_dir);
    data_dir_lock lock(cfg.data_dir, "is in use by another sluice process");
    cleanup.locked();
    raise_open_files_limit();
    // The SASL users; `sluice users` changes them while sluice is stopped.
    auto users = load_state("SASL users", [&] {
        return auth::credential_store::load(auth::credential_store::path_in(cfg.data_dir));
    });
    auth::failure_limiter auth_failures;
    // The ACLs; `sluice acls` changes them while sluice is stopped, CreateAcls/DeleteAcls while
    // it runs.
    auto authz = load_state("ACLs", [&] {
        return std::make_unique<auth::authorizer>(authz_settings,
                                                  auth::authorizer::path_in(cfg.data_dir));
    });
    // The client quotas; AlterClientQuotas changes them while sluice runs.
    auto quotas = load_state("client quotas", [&] {
        return std::make_unique<auth::client_quotas>(quota_cfg,
                                                     auth::client_quotas::path_in(cfg.data_dir));
    });
    // The SQS users' AWS access keys (SigV4); `sluice users set --aws-access-key-id` adds them.
    auto aws_keys = load_state("AWS access keys", [&] {
        return auth::aws_key_store::load(auth::aws_key_store::path_in(cfg.data_dir));
    });
    if (sqs_cfg.sigv4 && cfg.sqs.enabled && aws_keys.empty()) {
        log.warn("sqs.authentication=sigv4 but there are no access keys: every SQS request will "
                 "fail (add one with: sluice users set NAME --data-dir {} --aws-access-key-id ID)",
                 cfg.data_dir.string());
    }
    if (any_sasl && users.empty()) {
        log.warn("a SASL listener is configured but there are no users: every login will fail "
                 "(add one with: sluice users set NAME --data-dir {})",
                 cfg.data_dir.string());
    }

    // The state files were only read; the files a start writes come last, after everything
    // that can refuse the start short of a disk failure.
    const std::string cluster_id = load_or_create_cluster_id(cfg.data_dir);
    kafka_cfg.cluster_id = cluster_id;
    log.info("sluice starting: data dir {}, cluster id {}, memory allocator {}",
             std::filesystem::absolute(cfg.data_dir).string(), cluster_id, memory_allocator());

    // The audit log, installed for every front until run_server returns (or throws).
    audit_log audit(audit_cfg, true);
    const scoped_audit_log audit_installed(audit);
    if (audit.enabled()) {
        log.info("audit log: {}", audit_cfg.path);
    }

    // The one place that names a backend implementation: the fronts get its interfaces.
    auto native = backend::native::native_backend::open(std::move(native_opts));
    backend::api::backend& be = *native;

    metrics_registry metrics;
    register_authentication_metrics(metrics, kafka_cfg.sasl_mechanisms);
    audit.register_metrics(metrics);
    metrics.add_collector([&be](std::string& out) {
        render_partition_metrics(be.topics(), be.records(), out);
    });
    metrics.add_collector([&be](std::string& out) { render_group_metrics(be.groups(), out); });
    metrics.add_collector(render_process_metrics);
    // The native backend's syncs (the real file system's fdatasync and directory fsync).
    metrics.add_collector([](std::string& out) {
        out += "# HELP sluice_fsync_seconds Time of each fdatasync (kind=file) and directory "
               "fsync (kind=directory) of the data dir\n# TYPE sluice_fsync_seconds histogram\n";
        for (auto [kind, name] : {std::pair{backend::io::sync_kind::file, "file"},
                                  std::pair{backend::io::sync_kind::directory, "directory"}}) {
            const auto s = backend::io::sync_latency(kind);
            render_histogram(out, "sluice_fsync_seconds",
                             metrics_registry::format_labels({{"kind", name}}),
                             backend::io::sync_latency_bounds, s.buckets, s.sum_seconds, s.count);
        }
    });
    backend::api::queues& queues = native->queues();
    metrics.add_collector([&queues](std::string& out) { sqs::render_queue_metrics(queues, out); });
    // Kafka requests read but not yet answered, across all connections. Declared before the io
    // threads so that it outlives every connection coroutine (and the reservations they hold).
    request_budget kafka_budget(kafka_cfg.queued_max_request_bytes, kafka_cfg.queued_max_requests,
                                metrics);
    // HTTP and SQS request bodies being read or held, across both listeners; likewise declared
    // before the io threads.
    body_budget http_bodies(http_cfg.body_budget_bytes, http_cfg.body_budget_wait, metrics);
    http_cfg.limits.bodies = &http_bodies;
    services svc{cfg,         kafka_cfg,   metrics,
                 be.topics(), be.records(), be.groups(),
                 native->transactions(), kafka_budget, users, auth_failures, *authz,
                 tokens.get()};
    quota_meter quota_use(*quotas, metrics);
    svc.quotas = &quota_use;
    // The dynamic broker and group configs (AlterConfigs, IncrementalAlterConfigs), in force
    // before any listener starts. A name sluice reads at start (or shows as a broker config)
    // is static: refused as Kafka refuses read-only configs, not as an unknown name.
    std::set<std::string> shown_broker_configs;
    for (const auto& e : describe_broker_configs(svc)) {
        shown_broker_configs.insert(e.name);
    }
    dynamic_configs dynamic(dynamic_configs::path_in(cfg.data_dir), kafka_cfg.node_id,
                            be.topics(), be.groups(),
                            [&cfg, shown = std::move(shown_broker_configs)](const std::string& n) {
                                return cfg.known(n) || shown.count(n) != 0;
                            });
    load_state("dynamic configs", [&] {
        dynamic.load();
        return 0;
    });
    {
        asio::io_context applying;
        asio::co_spawn(applying, be.topics().apply_dynamic_configs(), asio::detached);
        applying.run();
    }
    svc.dynamic = &dynamic;
    io_pool pool(cfg.io_threads);
    pool.adopt_listening_sockets(std::move(bound));
    // Group and transaction timeouts run on the first io thread.
    be.start(pool.context(0).get_executor());
    // When start-up fails from here on (a listener's port is taken, say), the backend closes
    // while the io contexts it posts to still exist; after a normal shutdown this does nothing
    // (close() runs once).
    struct close_backend_first {
        io_pool& pool;
        backend::api::backend& be;
        ~close_backend_first() {
            pool.stop();
            pool.join();
            be.close();
        }
    } close_on_failure{pool, be};
    connection_tracker tracker(metrics.get_gauge("sluice_open_connections",
                                                 "Client connections currently open"));

    std::vector<std::unique_ptr<kafka_listener>> kafka;
    std::unique_ptr<http_server> http;
    std::unique_ptr<sqs::sqs_server> sqs_front;
    std::string listening;
    for (std::size_t i = 0; i < cfg.kafka.size(); ++i) {
        const auto& where = cfg.kafka[i];
        kafka.push_back(std::make_unique<kafka_listener>(pool, svc, tracker, where, kafka_tls[i]));
        auto ep = kafka.back()->local_endpoint();
        // "kafka=" for plaintext (what scripts have always read), "kafka_sasl_plaintext=" etc.
        std::string name = "kafka";
        if (where.protocol != security_protocol::plaintext) {
            std::string proto(to_string(where.protocol));
            std::transform(proto.begin(), proto.end(), proto.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
            name += "_" + proto;
        }
        listening += " " + name + "=" + ep.address().to_string() + ":" + std::to_string(ep.port());
    }
    if (cfg.http.enabled) {
        http = std::make_unique<http_server>(
            pool,
            http_services{svc.metrics, svc.topics, svc.records, svc.groups, queues,
                          svc.kafka.cluster_id, svc.kafka.node_id, svc.kafka.auto_create_topics,
                          svc.kafka.num_partitions, svc.users, svc.auth_failures, svc.authz,
                          svc.tokens, svc.quotas},
            tracker, cfg.http, std::move(http_cfg), http_tls);
        auto ep = http->local_endpoint();
        listening += std::string(http_tls ? " https=" : " http=") + ep.address().to_string() +
                     ":" + std::to_string(ep.port());
    }
    if (cfg.sqs.enabled) {
        sqs::sqs_settings sqs_front_cfg = sqs_cfg.front;
        if (http) {  // the console's pages are sluice's own
            sqs_front_cfg.origins.sibling_ports.push_back(http->local_endpoint().port());
        }
        sqs_front = std::make_unique<sqs::sqs_server>(
            pool, tracker, metrics, queues, std::move(sqs_front_cfg), cfg.sqs,
            http_limits{.bodies = &http_bodies},
            sqs::sqs_auth_config{sqs_cfg.sigv4 ? &aws_keys : nullptr, &auth_failures,
                                 &svc.authz, svc.quotas},
            sqs_tls);
        auto ep = sqs_front->local_endpoint();
        listening += std::string(sqs_tls ? " sqs_https=" : " sqs=") + ep.address().to_string() +
                     ":" + std::to_string(ep.port());
    }

    pool.start();
    for (auto& l : kafka) {
        l->start();
    }
    if (http) {
        http->start();
    }
    if (sqs_front) {
        sqs_front->start();
    }
    if (http) {
        http->set_ready(true);
    }
    // Wait for SIGINT/SIGTERM on a private context so that shutdown can run in order here.
    // SIGHUP reloads the TLS certificates and keys (new connections get the new context, open
    // ones keep theirs) and the OAUTHBEARER / Bearer token keys; a bad file leaves what was in
    // use in place.
    asio::io_context signal_io;
    asio::signal_set signals(signal_io, SIGINT, SIGTERM, SIGHUP);
    int received = 0;
    std::function<void(const boost::system::error_code&, int)> on_signal =
        [&](const boost::system::error_code& ec, int sig) {
            if (ec) {
                return;
            }
            if (sig != SIGHUP) {
                received = sig;
                return;
            }
            if (reloadable.empty() && !tokens) {
                log.info("SIGHUP received: no TLS listener or token key to reload");
            }
            if (tokens) {
                try {
                    const auto count = reload_jwt_keys(cfg, *tokens);
                    log.info("OAUTHBEARER and Bearer token keys reloaded ({} keys)", count);
                } catch (const config_error& e) {
                    log.error("token key reload failed, keeping the previous keys: {}",
                              e.what());
                }
            }
            for (auto& [what, holder] : reloadable) {
                try {
                    holder->reload();
                    log.info("{}: TLS certificate reloaded (serial {})", what,
                             holder->current()->serial);
                } catch (const auth::tls_error& e) {
                    log.error("{}: TLS reload failed, keeping the previous certificate: {}",
                              what, e.what());
                }
            }
            signals.async_wait(on_signal);
        };
    signals.async_wait(on_signal);
    // Tests and scripts wait for this line to learn the bound ports (port 0 picks a free one).
    log.info("listening:{}", listening);
    cleanup.disarm();

    signal_io.run();
    log.info("signal {} received: shutting down", received);

    // 1. Stop accepting. 2. Ask every connection to finish; after the grace period, cut the
    // rest. 3. Flush and close the backend.
    if (http) {
        http->set_ready(false);
    }
    for (auto& l : kafka) {
        l->stop();
    }
    if (http) {
        http->stop();
    }
    if (sqs_front) {
        sqs_front->stop();
    }
    // Parked JoinGroup/SyncGroup calls and SQS long polls are answered now so that
    // connections can finish.
    be.stop();
    tracker.stop_all(stop_mode::finish);
    // Connections, and the HTTP front's background work (REST consumers' group members).
    auto busy = [&] { return tracker.size() + (http ? http->pending() : 0); };
    auto wait_for_connections = [&busy](std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (busy() > 0 && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    };
    wait_for_connections(std::chrono::seconds(10));
    if (tracker.size() > 0) {
        log.warn("{} connections still open after the grace period; cutting them",
                 tracker.size());
        tracker.stop_all(stop_mode::cut);
        // Cut connections unwind on their io threads; whatever still runs after this stops
        // with the io threads below.
        wait_for_connections(std::chrono::seconds(1));
    }
    kafka_budget.close();  // a connection cut below must not stay parked in it
    http_bodies.close();
    pool.stop();
    pool.join();
    be.close();
    log.info("sluice stopped");
    return 0;
}

}  // namespace sluice::gateway
