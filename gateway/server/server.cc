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
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/host_name.hpp>
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
#include "backend/client/broker_client.h"
#include "backend/upstream/upstream_client.h"
#include "backend/io/sync_latency.h"
#include "backend/native/native_backend.h"
#include "backend/native/native_settings.h"
#include "backend/queue/client_backing.h"
#include "backend/queue/queue_service.h"
#include "backend/queue/topic_state_log.h"
#include "gateway/server/security_topic.h"
#include "gateway/core/settings.h"
#include "gateway/httpcore/body_budget.h"
#include "gateway/http/group_routes.h"
#include "gateway/http/http_server.h"
#include "gateway/http/http_settings.h"
#include "gateway/kafka/config_view.h"
#include "gateway/kafka/dynamic_configs.h"
#include "gateway/kafka/kafka_settings.h"
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
#include "gateway/sqs/sqs_settings.h"
#include "gateway/proxy/principal_map.h"
#include "gateway/proxy/proxy_listener.h"
#include "gateway/proxy/proxy_settings.h"
#include "gateway/proxy/upstream_login.h"
#include "gateway/proxy/upstream_topology.h"
#include "gateway/server/native_admin_stores.h"
#include "gateway/server/sqs_fleet.h"
#include "gateway/server/upstream_log_dirs.h"
#include "gateway/server/upstream_metrics.h"
#include "gateway/server/upstream_settings.h"
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

/// Upstream mode: librdkafka allocates and frees several small objects per consumed message
/// (its ops and messages), and mimalloc's default 25 ms before it gives freed pages back to
/// the system made the gateway fault them in again all the time: a 1 s delay took a third of
/// the gateway's CPU per record off WebSocket delivery (docs/benchmarks.md, "Upstream mode").
/// MIMALLOC_DECOMMIT_DELAY in the environment still wins. A no-op without mimalloc.
void tune_allocator_for_upstream() {
#ifdef SLUICE_MIMALLOC
    if (std::getenv("MIMALLOC_DECOMMIT_DELAY") == nullptr) {
        mi_option_set(mi_option_decommit_delay, 1000);
    }
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

/// Upstream mode shares the users, ACLs, quotas and AWS keys of the cluster's _sluice_security;
/// entries of the data dir's own files still apply, to this gateway alone, under the cluster's
/// (a record of the cluster for the same user, ACL, quota entity or key replaces or deletes
/// one). They are not imported: each gateway of a fleet would import its own, and a change made
/// through the cluster would be undone at the next start. Says so in the log when there are any.
void warn_about_local_security_state(const std::filesystem::path& data_dir,
                                     const std::string& bootstrap, std::size_t users,
                                     std::size_t acls, std::size_t quotas, std::size_t keys) {
    if (users + acls + quotas + keys == 0) {
        return;
    }
    server_log().warn(
        "upstream mode: the data dir {} has {} users, {} ACLs, {} quota entities and {} AWS "
        "keys of its own; they apply to THIS gateway only (under the cluster's {}, which every "
        "gateway shares: add them there with `sluice users|acls|quotas ... --upstream {}`, see "
        "docs/security.md)",
        data_dir.string(), users, acls, quotas, keys, auth::security_topic, bootstrap);
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

/// The native backend's options; a bad broker-level topic default ("invalid value 'x' for
/// log.segment.bytes: ...") stops the start like any bad setting.
backend::native::native_options read_native_options(const config& cfg) {
    try {
        return backend::native::read_native_options(config_values(cfg), cfg.data_dir);
    } catch (const config_error&) {
        throw;
    } catch (const std::runtime_error& e) {
        throw config_error(e.what());
    }
}

/// What /metrics shows in native mode: the backend's partitions and groups, the process, the
/// backend's syncs and queues (in this order, as always).
void add_native_metrics(metrics_registry& metrics, backend::native::native_backend& native) {
    backend::api::backend& be = native;
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
    backend::api::queues& queues = native.queues();
    metrics.add_collector([&queues](std::string& out) { sqs::render_queue_metrics(queues, out); });
}

/// The configuration upstream mode runs with: a Kafka listener given explicitly (a flag, --set,
/// the config file) serves the Kafka proxy (gateway/proxy: every listener protocol, TLS and
/// SASL terminated at the gateway); one from a SLUICE_* variable is taken as a default, as the
/// container image's SLUICE_LISTENERS is, and turned off like the default.
/// The SQS front runs when given explicitly (see below).
config upstream_mode_config(const config& given) {
    auto explicit_origin = [&](const std::string& key) {
        const std::string from = given.origin(key);
        return !from.empty() && !from.starts_with("SLUICE_");
    };
    config c = given;
    if (given.kafka.empty() || !explicit_origin("listeners")) {
        c.kafka.clear();
    }
    // The SQS front is served when asked for explicitly (a flag, --set, the config file): a
    // SLUICE_* default (the container image's, shared by every replica) does not turn it on.
    if (!explicit_origin("sqs.listener")) {
        c.sqs.enabled = false;
    }
    return c;
}

/// The upstream cluster's id, asked once at start (REST v3 names the cluster by it); empty,
/// with a warning, when the cluster cannot be reached within the call's deadline
/// (upstream.request.timeout.ms): sluice serves anyway, /readyz saying why it is not ready.
std::string upstream_cluster_id(backend::api::client& client, const upstream_settings& upstream) {
    asio::io_context asking;
    backend::api::backend_result<backend::api::cluster_info> found =
        std::unexpected(backend::api::backend_error{});
    asio::co_spawn(
        asking,
        [](backend::api::client* c, backend::api::backend_result<backend::api::cluster_info>* out)
            -> asio::awaitable<void> { *out = co_await c->admin().describe_cluster(); }(&client,
                                                                                     &found),
        asio::detached);
    asking.run();  // describe_cluster has the upstream deadline: this ends
    if (!found) {
        server_log().warn("upstream {}: cluster id unknown ({}): REST v3 answers 404 for the "
                          "cluster's paths until a restart reaches the cluster",
                          upstream.bootstrap_servers,
                          found.error().message.empty() ? found.error().code.message()
                                                        : found.error().message);
        return {};
    }
    return found->cluster_id;
}

/// Everything is stopped and flushed when run_server returns; what is left is tearing its
/// parts down, the upstream client's librdkafka handles among them. librdkafka 2.0.2 can hold
/// a consumer's destroy for good (a partition of a topic deleted just before the stop stays
/// referenced, librdkafka #4724: seen about once in five when an SQS queue was deleted right
/// before SIGTERM). A stopped gateway must still exit: if the teardown has not ended the
/// process within 10 s, one warning and the process ends with status 0. Nothing is lost by it:
/// every connection was closed and the native log closed before "sluice stopped", and the
/// upstream producer's flush in the teardown is bounded by 6 s (upstream_client.cc).
void arm_teardown_watchdog() {
    std::thread([] {
        std::this_thread::sleep_for(std::chrono::seconds(10));
        server_log().warn("teardown held for 10 s after the stop (librdkafka); exiting now");
        spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->flush(); });
        std::_Exit(0);
    }).detach();
}

}  // namespace

std::unique_ptr<backend::api::client> open_upstream_client(const upstream_settings& upstream) {
    backend::upstream::upstream_options opts;
    opts.properties = upstream.properties;
    opts.request_timeout = upstream.request_timeout;
    opts.log_dirs = make_upstream_log_dirs_reader(upstream);
    try {
        return backend::upstream::make_upstream_client(std::move(opts));
    } catch (const std::invalid_argument& e) {
        throw config_error(e.what());
    }
}

setting_catalog settings_catalog() {
    setting_catalog c;
    c.add(core_setting_table());
    c.add(kafka_setting_table());
    c.add(tls_setting_table());
    c.add(token_setting_table());
    c.add(quota_setting_table());
    c.add(http_setting_table());
    c.add(authorizer_setting_table());
    c.add(sqs::sqs_setting_table());
    c.add(audit_setting_table());
    c.add(upstream_setting_table());
    c.add(proxy::proxy_setting_table());
    c.add(backend::native::native_setting_tables());
    return c;
}

int run_server(const config& given) {
    configure_logging(parse_log_levels(given.log_level), parse_log_format(given.log_format));
    auto& log = server_log();
    // A peer that closes its connection while a response is sent with sendfile (which has no
    // MSG_NOSIGNAL) would kill the process with SIGPIPE; the write fails with EPIPE instead.
    std::signal(SIGPIPE, SIG_IGN);

    // Upstream mode (--upstream): the HTTP fronts over a Kafka cluster, no local log.
    const upstream_settings upstream = read_upstream_settings(given);
    const config cfg = upstream.enabled() ? upstream_mode_config(given) : given;
    if (upstream.enabled()) {
        tune_allocator_for_upstream();
    }
    if (upstream.enabled() && !given.kafka.empty() && cfg.kafka.empty()) {
        log.info("upstream mode: the Kafka listener is off unless given explicitly (--kafka "
                 "serves the Kafka proxy)");
    }
    if (upstream.enabled() && given.sqs.enabled && !cfg.sqs.enabled) {
        log.info("upstream mode: the SQS listener is off unless given explicitly (--sqs "
                 "joins this gateway to the fleet serving the cluster's queues)");
    }

    // TLS contexts are built (and their files checked) before the data dir is touched.
    read_tls_settings(cfg, "ssl");  // a bad ssl.client.auth stops even a start without TLS
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
    const proxy::proxy_settings proxy_cfg = proxy::read_proxy_settings(cfg);
    http_settings http_cfg = read_http_settings(cfg);
    sqs::sqs_front_config sqs_cfg = sqs::read_sqs_settings(cfg);
    sqs_cfg.front.origins.allow_origins = read_allowed_origins(cfg);
    const auto tokens = read_jwt_verifier(cfg);
    const auth::authorizer_settings authz_settings = read_authorizer_settings(cfg);
    const audit_settings audit_cfg = read_audit_settings(cfg);
    const auth::quota_settings quota_cfg = read_quota_settings(cfg);
    native_opts.queues.arns.region = sqs_cfg.front.region;
    native_opts.queues.arns.account = sqs_cfg.front.account;
    native_opts.queues.sender_id = sqs_cfg.front.account;
    kafka_cfg.offset_metadata_max_bytes = native_opts.groups.offset_metadata_max_bytes;
    // Every setting given must be declared in a table; a SLUICE_* variable that names none is
    // only reported.
    const setting_catalog catalog = settings_catalog();
    const auto ignored = cfg.reject_unknown(catalog);
    if (!ignored.empty()) {
        log.warn("{}", ignored_variables_warning(ignored));
        for (const auto& v : ignored) {
            native_opts.properties.erase(v.key);
        }
    }
    // Upstream mode: the clients start connecting now; a property librdkafka refuses stops
    // the start before anything is bound or created.
    std::unique_ptr<backend::api::client> upstream_client;
    if (upstream.enabled()) {
        upstream_client = open_upstream_client(upstream);
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
    // Upstream mode: the users, ACLs, quotas and keys are the cluster's (_sluice_security,
    // read below) over the data dir's own, which apply to this gateway alone.
    const bool shared_security = upstream.enabled();
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
    // Upstream mode: every gateway of the fleet keeps the cluster's copy, tailed for good; not
    // ready (/readyz) until it has read what the topic held at start. It starts with the HTTP
    // front, once every setting has been checked (a refused start does not wait for it).
    std::unique_ptr<security_mirror> mirror;
    if (shared_security) {
        warn_about_local_security_state(cfg.data_dir, upstream.bootstrap_servers,
                                        users.users().size(), authz->acls().size(),
                                        quotas->entries().size(), aws_keys.keys().size());
        mirror = std::make_unique<security_mirror>(
            *upstream_client,
            security_mirror::stores{users, *authz, *quotas, aws_keys});
    }
    // Upstream mode: the console's user changes go to _sluice_security first (declared
    // before the HTTP front, so that it outlives it).
    std::unique_ptr<shared_security_users> console_users;
    std::unique_ptr<shared_security_acls> console_acls;
    if (shared_security) {
        console_users = std::make_unique<shared_security_users>(*upstream_client);
        console_acls = std::make_unique<shared_security_acls>(*upstream_client, *authz,
                                                              upstream.request_timeout);
    }
    if (!shared_security && sqs_cfg.sigv4 && cfg.sqs.enabled && aws_keys.empty()) {
        log.warn("sqs.authentication=sigv4 but there are no access keys: every SQS request will "
                 "fail (add one with: sluice users set NAME --data-dir {} --aws-access-key-id ID)",
                 cfg.data_dir.string());
    }
    if (!shared_security && any_sasl && users.empty()) {
        log.warn("a SASL listener is configured but there are no users: every login will fail "
                 "(add one with: sluice users set NAME --data-dir {})",
                 cfg.data_dir.string());
    }

    // The state files were only read; the files a start writes come last, after everything
    // that can refuse the start short of a disk failure. Upstream mode writes none: the
    // cluster's identity is the upstream cluster's.
    if (upstream.enabled()) {
        log.info("sluice starting in upstream mode: bootstrap {}, data dir {} (users, ACLs, "
                 "quotas and keys: the cluster's {}), memory allocator {}",
                 upstream.bootstrap_servers, std::filesystem::absolute(cfg.data_dir).string(),
                 auth::security_topic, memory_allocator());
    } else {
        kafka_cfg.cluster_id = load_or_create_cluster_id(cfg.data_dir);
        log.info("sluice starting: data dir {}, cluster id {}, memory allocator {}",
                 std::filesystem::absolute(cfg.data_dir).string(), kafka_cfg.cluster_id,
                 memory_allocator());
    }

    // The audit log, installed for every front until run_server returns (or throws).
    audit_log audit(audit_cfg, true);
    const scoped_audit_log audit_installed(audit);
    if (audit.enabled()) {
        log.info("audit log: {}", audit_cfg.path);
    }

    // The one place that names a backend implementation: the fronts get its interfaces. The
    // native backend (the local log) in native mode only.
    std::unique_ptr<backend::native::native_backend> native;
    if (!upstream.enabled()) {
        native = backend::native::native_backend::open(std::move(native_opts));
    }
    // Upstream mode's queues (with --sqs): every such gateway of a cluster is one of a fleet;
    // the one the owner group assigns the queue state serves the queues, the others forward
    // to it (gateway/server/sqs_fleet.h). Nothing reaches the cluster before start().
    std::unique_ptr<sqs_fleet> cluster_queues;
    if (upstream.enabled() && cfg.sqs.enabled) {
        log.info("upstream mode: this gateway serves the SQS queues of {} with every other "
                 "SQS gateway of that cluster (queue = the upstream topic of the same name, "
                 "state in _sluice_queue_state, written by one owner at a time, fenced by its "
                 "transactional id; the others forward to it)",
                 upstream.bootstrap_servers);
        sqs_fleet_options fleet_opts;
        fleet_opts.session_timeout_ms =
            static_cast<std::int32_t>(sqs_cfg.fleet_session_timeout.count());
        // Long enough for a silent owner's session to run out and the next to take over.
        fleet_opts.owner_wait = sqs_cfg.fleet_session_timeout + std::chrono::seconds(10);
        cluster_queues = std::make_unique<sqs_fleet>(*upstream_client, native_opts.queues,
                                                     std::move(fleet_opts));
    }

    metrics_registry metrics;
    register_authentication_metrics(metrics, kafka_cfg.sasl_mechanisms);
    audit.register_metrics(metrics);
    if (native) {
        add_native_metrics(metrics, *native);
    } else {
        metrics.add_collector([client = upstream_client.get()](std::string& out) {
            render_upstream_metrics(client->statistics(), out);
        });
        metrics.add_collector(render_process_metrics);
        if (cluster_queues) {
            backend::api::queues& queues = *cluster_queues;
            metrics.add_collector(
                [&queues](std::string& out) { sqs::render_queue_metrics(queues, out); });
        }
    }
    // Kafka requests read but not yet answered, across all connections. Declared before the io
    // threads so that it outlives every connection coroutine (and the reservations they hold).
    request_budget kafka_budget(kafka_cfg.queued_max_request_bytes, kafka_cfg.queued_max_requests,
                                metrics);
    // HTTP and SQS request bodies being read or held, across both listeners; likewise declared
    // before the io threads.
    body_budget http_bodies(http_cfg.body_budget_bytes, http_cfg.body_budget_wait, metrics);
    http_cfg.limits.bodies = &http_bodies;
    quota_meter quota_use(*quotas, metrics);
    // The policy chain every front asks (gateway/policy/chain.h).
    const policy_chain chain(authz.get(), &quota_use);
    // The Kafka front's services: native mode only.
    std::optional<services> kafka_svc;
    std::optional<dynamic_configs> dynamic;
    if (native) {
        kafka_svc.emplace(services{cfg, kafka_cfg, metrics, native->topics(), native->records(),
                                   native->groups(), native->transactions(), kafka_budget, users,
                                   auth_failures, *authz, tokens.get()});
        kafka_svc->quotas = &quota_use;
        kafka_svc->chain = chain;
        // The dynamic broker and group configs (AlterConfigs, IncrementalAlterConfigs), in
        // force before any listener starts. A name sluice reads at start (or shows as a broker
        // config) is static: refused as Kafka refuses read-only configs, not as an unknown name.
        std::set<std::string> shown_broker_configs;
        for (const auto& e : describe_broker_configs(*kafka_svc)) {
            shown_broker_configs.insert(e.name);
        }
        dynamic.emplace(dynamic_configs::path_in(cfg.data_dir), kafka_cfg.node_id,
                        native->topics(), native->groups(),
                        [&catalog, shown = std::move(shown_broker_configs)](const std::string& n) {
                            return catalog.known(n) || shown.count(n) != 0;
                        });
        load_state("dynamic configs", [&] {
            dynamic->load();
            return 0;
        });
        {
            asio::io_context applying;
            asio::co_spawn(applying, native->topics().apply_dynamic_configs(), asio::detached);
            applying.run();
        }
        kafka_svc->dynamic = &*dynamic;
    }
    io_pool pool(cfg.io_threads);
    pool.adopt_listening_sockets(std::move(bound));
    // Group and transaction timeouts run on the first io thread.
    if (native) {
        native->start(pool.context(0).get_executor());
    }
    // When start-up fails from here on (a listener's port is taken, say), the backend closes
    // while the io contexts it posts to still exist; after a normal shutdown this does nothing
    // (close() runs once).
    struct close_backend_first {
        io_pool& pool;
        backend::api::backend* be;
        ~close_backend_first() {
            pool.stop();
            pool.join();
            if (be != nullptr) {
                be->close();
            }
        }
    } close_on_failure{pool, native.get()};
    connection_tracker tracker(metrics.get_gauge("sluice_open_connections",
                                                 "Client connections currently open"));

    // The native admin's ACLs are the authorizer's and its broker configs the Kafka front's
    // dynamic configs (upstream mode: the cluster's).
    const auto acl_store = make_authorizer_acl_store(*authz);
    std::unique_ptr<backend::api::broker_config_store> broker_config_store;
    if (dynamic) {
        broker_config_store = make_dynamic_broker_config_store(*dynamic, native->topics());
    }
    // The native client level (made once the Kafka listeners are bound), declared before the
    // fronts so that it outlives them.
    std::unique_ptr<backend::api::client> broker_client;
    std::vector<std::unique_ptr<kafka_listener>> kafka;
    // Upstream mode: the Kafka listeners serve the Kafka proxy over the upstream's brokers.
    std::unique_ptr<proxy::upstream_topology> topology;
    proxy::principal_map_source principals;  // proxy.principal.map (SIGHUP reads it again)
    proxy::principal_map_upstream map_upstream;  // what the map's entries may give
    std::optional<proxy::proxy_services> proxy_svc;
    std::vector<std::unique_ptr<proxy::proxy_listener>> proxies;
    std::unique_ptr<http_server> http;
    std::unique_ptr<sqs::sqs_server> sqs_front;
    std::string listening;
    if (!native && !cfg.kafka.empty()) {
        std::vector<proxy::upstream_address> servers;
        try {
            servers = proxy::parse_bootstrap_servers(upstream.bootstrap_servers);
        } catch (const std::invalid_argument& e) {
            throw config_error(e.what());
        }
        proxy::upstream_login login;
        std::shared_ptr<auth::tls_client_context> upstream_tls;
        try {
            login = proxy::read_upstream_login(upstream.properties);
            upstream_tls = proxy::read_upstream_tls(upstream.properties);
            map_upstream.sasl = login.enabled();
            if (!map_upstream.sasl) {
                map_upstream.tls = proxy::read_upstream_tls_settings(upstream.properties);
            }
        } catch (const std::invalid_argument& e) {
            throw config_error(std::string(e.what()) + " (the Kafka listener serves the proxy)");
        }
        if (!proxy_cfg.principal_map_file.empty()) {
            if (!map_upstream.sasl && !map_upstream.tls) {
                throw config_error("proxy.principal.map: the upstream logins it maps to need "
                                   "upstream.security.protocol SASL_PLAINTEXT or SASL_SSL "
                                   "(SASL credentials) or SSL (client certificates)");
            }
            try {
                principals.replace(proxy::principal_map::load(
                    proxy_cfg.principal_map_file, proxy_cfg.deny_unmapped, map_upstream));
            } catch (const std::invalid_argument& e) {
                throw config_error(e.what());
            }
            struct stat map_stat {};
            if (::stat(proxy_cfg.principal_map_file.c_str(), &map_stat) == 0 &&
                (map_stat.st_mode & 0077) != 0) {
                server_log().warn("proxy.principal.map {} can be read by other users (mode "
                                  "{:04o}): it holds upstream passwords or key passwords",
                                  proxy_cfg.principal_map_file, map_stat.st_mode & 07777);
            }
            server_log().info("Kafka proxy: {} client principals with upstream credentials of "
                              "their own ({}); the others {}",
                              principals.current()->size(), proxy_cfg.principal_map_file,
                              proxy_cfg.deny_unmapped ? "are refused"
                              : map_upstream.sasl     ? "use upstream.sasl.username"
                                                      : "use upstream.ssl.certificate.location");
        }
        if (proxy_cfg.sasl_passthrough) {
            // The upstream authenticates each client: nothing of the gateway's may stand in.
            if (!login.enabled()) {
                throw config_error("proxy.sasl.passthrough: the upstream authenticates the "
                                   "clients, so upstream.security.protocol must be "
                                   "SASL_PLAINTEXT or SASL_SSL");
            }
            if (authz_settings.enabled) {
                throw config_error("proxy.sasl.passthrough: the gateway does not learn its "
                                   "clients' principals, so its ACLs cannot apply; turn "
                                   "authorizer.enabled off (the upstream's ACLs apply)");
            }
            if (!proxy_cfg.principal_map_file.empty()) {
                throw config_error("proxy.sasl.passthrough: the clients log in upstream "
                                   "themselves, so proxy.principal.map cannot apply");
            }
            for (const auto& where : cfg.kafka) {
                if (where.protocol != security_protocol::sasl_plaintext &&
                    where.protocol != security_protocol::sasl_ssl) {
                    throw config_error("proxy.sasl.passthrough: the Kafka listener " +
                                       std::string(to_string(where.protocol)) + "://" +
                                       where.where.to_string() + " is not SASL_PLAINTEXT or "
                                       "SASL_SSL: its clients would reach the upstream with "
                                       "the gateway's credentials");
                }
            }
            server_log().info("Kafka proxy: SASL passthrough (proxy.sasl.passthrough): the "
                              "upstream authenticates and authorizes each client");
        }
        topology = std::make_unique<proxy::upstream_topology>(
            std::move(servers), proxy_cfg.metadata_refresh, upstream.request_timeout,
            std::move(login), std::move(upstream_tls));
        proxy_svc.emplace(proxy::proxy_services{*topology, kafka_budget});
        proxy_svc->max_request_bytes = kafka_cfg.max_request_bytes;
        proxy_svc->max_in_flight = kafka_cfg.max_in_flight;
        proxy_svc->idle_timeout = std::chrono::milliseconds(kafka_cfg.idle_timeout_ms);
        // SASL termination on SASL_PLAINTEXT listeners: the broker mode's users and mechanisms.
        proxy_svc->login = proxy::client_login_services{&users, tokens.get(), &auth_failures,
                                                        &metrics, kafka_cfg.sasl_mechanisms,
                                                        chain, kafka_cfg.max_reauth_ms};
        if (!proxy_cfg.principal_map_file.empty()) {
            proxy_svc->principals = &principals;
            if (proxy_cfg.deny_unmapped) {
                proxy_svc->login.principals = &principals;
            }
        }
        // ACLs on forwarded requests (gateway/proxy/request_acls.h).
        proxy_svc->chain = chain;
        proxy_svc->sasl_passthrough = proxy_cfg.sasl_passthrough;
        // SNI routing reads the server name of a TLS handshake: every listener must have one.
        if (proxy_cfg.sni_pattern) {
            for (const auto& where : cfg.kafka) {
                if (where.protocol != security_protocol::ssl &&
                    where.protocol != security_protocol::sasl_ssl) {
                    throw config_error("proxy.sni.host.pattern: the Kafka listener " +
                                       std::string(to_string(where.protocol)) + "://" +
                                       where.where.to_string() + " has no TLS; SNI routing "
                                       "needs every --kafka listener to be SSL or SASL_SSL");
                }
            }
        }
    }
    for (std::size_t i = 0; i < cfg.kafka.size(); ++i) {
        const auto& where = cfg.kafka[i];
        boost::asio::ip::tcp::endpoint ep;
        if (native) {
            kafka.push_back(
                std::make_unique<kafka_listener>(pool, *kafka_svc, tracker, where, kafka_tls[i]));
            ep = kafka.back()->local_endpoint();
        } else {
            // proxy.node.port.base applies to the first listener; others count from their own
            // port + 1.
            proxies.push_back(std::make_unique<proxy::proxy_listener>(
                pool, tracker, metrics, *proxy_svc, where.where,
                i == 0 ? proxy_cfg.node_port_base : 0, kafka_cfg.advertised.host,
                where.protocol == security_protocol::sasl_plaintext ||
                    where.protocol == security_protocol::sasl_ssl,
                kafka_tls[i], proxy_cfg.sni_pattern,
                i == 0 ? static_cast<std::int32_t>(kafka_cfg.advertised.port) : 0));
            ep = proxies.back()->local_endpoint();
            topology->subscribe(
                [l = proxies.back().get()](const auto& brokers) { l->brokers_changed(brokers); });
        }
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
    // The client level the HTTP front stands on: over the native backend's broker level, or
    // the upstream cluster's clients. The native one's broker is this node as Kafka clients
    // see it: --advertise-kafka, else the first Kafka listener's bound address (the host name
    // when it listens on every address).
    if (native) {
        backend::client::broker_client_options client_opts;
        client_opts.cluster_id = kafka_cfg.cluster_id;
        client_opts.self.node_id = kafka_cfg.node_id;
        client_opts.self.host = kafka_cfg.advertised.host;
        client_opts.self.port = kafka_cfg.advertised.port;
        client_opts.acls = acl_store.get();
        client_opts.broker_configs = broker_config_store.get();
        if (client_opts.self.host.empty() && !kafka.empty()) {
            const auto ep = kafka.front()->local_endpoint();
            client_opts.self.host = ep.address().is_unspecified() ? boost::asio::ip::host_name()
                                                                  : ep.address().to_string();
            client_opts.self.port = ep.port();
        }
        broker_client = backend::client::make_broker_client(
            native->topics(), native->records(), native->groups(), std::move(client_opts));
    }
    backend::api::client& client = native ? *broker_client : *upstream_client;
    if (!native) {
        kafka_cfg.cluster_id = upstream_cluster_id(client, upstream);
        if (!kafka_cfg.cluster_id.empty()) {
            log.info("upstream cluster id {}", kafka_cfg.cluster_id);
        }
    }
    if (mirror) {
        mirror->start();
    }
    if (cfg.http.enabled) {
        http_services hs{metrics,
                         client,
                         native ? &native->topics() : nullptr,
                         native ? &native->records() : nullptr,
                         native ? &native->groups() : nullptr,
                         native           ? &native->queues()
                         : cluster_queues ? static_cast<backend::api::queues*>(cluster_queues.get())
                                          : nullptr,
                         kafka_cfg.cluster_id,
                         kafka_cfg.node_id,
                         kafka_cfg.auto_create_topics,
                         kafka_cfg.num_partitions,
                         users,
                         auth_failures,
                         tokens.get(),
                         chain};
        if (mirror) {
            hs.not_ready_reason = [m = mirror.get()] { return m->not_ready_reason(); };
        }
        hs.shared_user_state = console_users.get();
        // Upstream mode: the console lists the gateway's own ACLs beside the cluster's.
        hs.gateway_acls = upstream.enabled() ? acl_store.get() : nullptr;
        hs.shared_gateway_acls = console_acls.get();
        http = std::make_unique<http_server>(pool, std::move(hs), tracker, cfg.http,
                                             std::move(http_cfg), http_tls);
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
            pool, tracker, metrics, native ? native->queues() : *cluster_queues,
            std::move(sqs_front_cfg), cfg.sqs,
            http_limits{.bodies = &http_bodies},
            sqs::sqs_auth_config{sqs_cfg.sigv4 ? &aws_keys : nullptr, &auth_failures,
                                 chain},
            sqs_tls);
        auto ep = sqs_front->local_endpoint();
        listening += std::string(sqs_tls ? " sqs_https=" : " sqs=") + ep.address().to_string() +
                     ":" + std::to_string(ep.port());
        if (cluster_queues) {
            std::string self_url = sqs_cfg.fleet_url;
            if (self_url.empty()) {
                const auto a = ep.address();
                const std::string host =
                    a.is_unspecified() ? (a.is_v6() ? "[::1]" : "127.0.0.1")
                                       : (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string());
                self_url = "http://" + host + ":" + std::to_string(ep.port());
            }
            if (sqs_tls) {
                log.warn("SQS fleet: the other gateways forward to this one over plain HTTP "
                         "({}), and its listener is HTTPS: set sqs.fleet.url to a plain HTTP "
                         "address of it",
                         self_url);
            }
            sqs_front->set_forwarder(cluster_queues.get());
            cluster_queues->start(pool.context(0).get_executor(), self_url);
        }
    }

    pool.start();
    for (auto& l : kafka) {
        l->start();
    }
    for (auto& l : proxies) {
        l->start();
    }
    if (topology) {
        topology->start(pool.context(0).get_executor());
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
    // ones keep theirs), the OAUTHBEARER / Bearer token keys and proxy.principal.map; a bad
    // file leaves what was in use in place.
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
            const bool map_reloads = proxy_svc && !proxy_cfg.principal_map_file.empty();
            if (reloadable.empty() && !tokens && !map_reloads) {
                log.info("SIGHUP received: no TLS listener, token key or principal map to "
                         "reload");
            }
            if (map_reloads) {
                // New logins and upstream connections use it; open ones keep their login.
                try {
                    principals.replace(proxy::principal_map::load(
                        proxy_cfg.principal_map_file, proxy_cfg.deny_unmapped, map_upstream));
                    log.info("proxy.principal.map reloaded: {} client principals ({})",
                             principals.current()->size(), proxy_cfg.principal_map_file);
                } catch (const std::invalid_argument& e) {
                    log.error("proxy.principal.map reload failed, keeping the previous map: {}",
                              e.what());
                }
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
    if (upstream_client) {
        upstream_client->start_closing();  // a cluster that is gone is not waited for
    }

    // 1. Stop accepting. 2. Ask every connection to finish; after the grace period, cut the
    // rest. 3. Flush and close the backend.
    if (http) {
        http->set_ready(false);
    }
    for (auto& l : kafka) {
        l->stop();
    }
    for (auto& l : proxies) {
        l->stop();
    }
    if (topology) {
        topology->stop();
    }
    if (http) {
        http->stop();
    }
    if (sqs_front) {
        sqs_front->stop();
    }
    // Parked JoinGroup/SyncGroup calls and SQS long polls are answered now so that
    // connections can finish.
    if (native) {
        native->stop();
    }
    if (cluster_queues) {
        cluster_queues->stop();
    }
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
    if (native) {
        native->close();
    }
    log.info("sluice stopped");
    arm_teardown_watchdog();
    return 0;
}

}  // namespace sluice::gateway
