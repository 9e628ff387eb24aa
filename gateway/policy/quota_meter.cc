#include "gateway/policy/quota_meter.h"

#include <fmt/format.h>

#include "gateway/core/logger.h"

namespace sluice::gateway {
namespace {

constexpr std::array<std::string_view, quota_front_count> front_names = {"kafka", "http",
                                                                         "websocket", "sse", "sqs"};
constexpr auto warn_interval = std::chrono::minutes(1);

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

auth::quota_settings read_quota_settings(const config& cfg) {
    auth::quota_settings s;
    const auto samples = cfg.get_int("quota.window.num", 11);
    if (samples < 2 || samples > 1000) {
        throw config_error("quota.window.num: " + std::to_string(samples) +
                           " is outside [2, 1000]");
    }
    const auto seconds = cfg.get_int("quota.window.size.seconds", 1);
    if (seconds < 1 || seconds > 3600) {
        throw config_error("quota.window.size.seconds: " + std::to_string(seconds) +
                           " is outside [1, 3600]");
    }
    s.samples = static_cast<int>(samples);
    s.window = std::chrono::seconds(seconds);
    for (auto [key, out] : {std::pair{"quota.producer.default", &s.producer_default},
                            std::pair{"quota.consumer.default", &s.consumer_default}}) {
        // compat: Kafka's old broker settings; Long.MAX_VALUE (its default) means no quota.
        const auto v = cfg.get_int(key, -1);
        if (v == 0 || v < -1) {
            throw config_error(std::string(key) + ": " + std::to_string(v) +
                               " is not a byte rate (a positive number of bytes/s)");
        }
        if (v > 0 && v != INT64_MAX) {
            *out = static_cast<double>(v);
        }
    }
    return s;
}

std::string quota_user(std::string_view principal) {
    constexpr std::string_view prefix = "User:";
    if (principal.starts_with(prefix) && principal.size() > prefix.size()) {
        return std::string(principal.substr(prefix.size()));
    }
    return principal.empty() ? std::string("ANONYMOUS") : std::string(principal);
}

quota_meter::quota_meter(auth::client_quotas& quotas, metrics_registry& metrics)
    : quotas_(quotas) {
    metrics.add_collector([this](std::string& out) { render(out); });
}

std::chrono::milliseconds quota_meter::record(quota_front front, auth::quota_kind kind,
                                              std::string_view principal,
                                              std::string_view client_id, double amount) {
    if (!quotas_.any()) {
        return std::chrono::milliseconds(0);
    }
    const auto f = static_cast<std::size_t>(front);
    const auto k = static_cast<std::size_t>(kind);
    bytes_[f][k].fetch_add(static_cast<std::uint64_t>(amount), std::memory_order_relaxed);
    const auto ms = quotas_.record(kind, quota_user(principal), client_id, amount);
    count_throttle(front, kind, principal, client_id, ms);
    return ms;
}

std::chrono::milliseconds quota_meter::throttled_now(quota_front front, auth::quota_kind kind,
                                                     std::string_view principal,
                                                     std::string_view client_id) {
    if (!quotas_.any()) {
        return std::chrono::milliseconds(0);
    }
    const auto ms = quotas_.throttle_now(kind, quota_user(principal), client_id);
    count_throttle(front, kind, principal, client_id, ms);
    return ms;
}

bool quota_meter::applies(auth::quota_kind kind, std::string_view principal,
                          std::string_view client_id) const {
    return quotas_.any() && quotas_.find(kind, quota_user(principal), client_id).has_value();
}

std::chrono::milliseconds quota_meter::record_request_time(quota_front front,
                                                           std::string_view principal,
                                                           std::string_view client_id,
                                                           std::chrono::nanoseconds busy) {
    if (!quotas_.any() || busy.count() <= 0) {
        return std::chrono::milliseconds(0);
    }
    busy_ns_[static_cast<std::size_t>(front)].fetch_add(static_cast<std::uint64_t>(busy.count()),
                                                        std::memory_order_relaxed);
    // compat: ClientRequestQuotaManager.nanosToPercentage: 100 per second of thread time.
    const double percent_seconds = static_cast<double>(busy.count()) * 100.0 / 1e9;
    constexpr auto kind = auth::quota_kind::request_percentage;
    const auto ms = quotas_.record(kind, quota_user(principal), client_id, percent_seconds);
    count_throttle(front, kind, principal, client_id, ms);
    return ms;
}

std::optional<double> quota_meter::headroom(auth::quota_kind kind, std::string_view principal,
                                            std::string_view client_id) {
    return quotas_.headroom(kind, quota_user(principal), client_id);
}

void quota_meter::count_throttle(quota_front front, auth::quota_kind kind,
                                 std::string_view principal, std::string_view client_id,
                                 std::chrono::milliseconds ms) {
    if (ms.count() <= 0) {
        return;
    }
    const auto f = static_cast<std::size_t>(front);
    const auto k = static_cast<std::size_t>(kind);
    throttle_ms_[f][k].fetch_add(static_cast<std::uint64_t>(ms.count()),
                                 std::memory_order_relaxed);
    throttled_[f][k].fetch_add(1, std::memory_order_relaxed);
    const auto now = now_ms();
    auto last = last_warn_ms_.load(std::memory_order_relaxed);
    const auto interval = std::chrono::milliseconds(warn_interval).count();
    if ((last != 0 && now - last < interval) ||
        !last_warn_ms_.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
        unreported_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const auto others = unreported_.exchange(0, std::memory_order_relaxed);
    server_log().warn("quota: {} client '{}' on the {} front is over its {}, throttled {} ms "
                      "({} more throttled requests since the last such line; at most one a "
                      "minute)",
                      principal.empty() ? "User:ANONYMOUS" : principal, client_id,
                      front_names[f], auth::to_string(kind), ms.count(), others);
}

void quota_meter::render(std::string& out) const {
    struct family {
        const char* name;
        const char* help;
        const cells* values;
        double scale;
    };
    const std::array<family, 3> families = {
        family{"sluice_quota_bytes_total",
               "Bytes recorded against client quotas (produced and fetched record bytes), by "
               "front and quota",
               &bytes_, 1.0},
        family{"sluice_throttle_time_seconds_total",
               "Throttle time given to clients over a quota, by front and quota", &throttle_ms_,
               0.001},
        family{"sluice_throttled_requests_total",
               "Requests that were over a client quota, by front and quota", &throttled_, 1.0}};
    for (const auto& fam : families) {
        out += std::string("# HELP ") + fam.name + " " + fam.help + "\n# TYPE " + fam.name +
               " counter\n";
        for (std::size_t f = 0; f < quota_front_count; ++f) {
            for (std::size_t k = 0; k < auth::quota_kind_count; ++k) {
                if (fam.values == &bytes_ && !auth::is_byte_rate(static_cast<auth::quota_kind>(k))) {
                    continue;  // request time has its own family, below
                }
                const auto v = (*fam.values)[f][k].load(std::memory_order_relaxed);
                out += fam.name;
                out += "{";
                out += metrics_registry::format_labels(
                    {{"front", std::string(front_names[f])},
                     {"quota", std::string(auth::to_string(static_cast<auth::quota_kind>(k)))}});
                out += "} " + fmt::format("{}", static_cast<double>(v) * fam.scale) + "\n";
            }
        }
    }
    out += "# HELP sluice_quota_request_time_seconds_total Io-thread time of requests recorded "
           "against request_percentage quotas, by front\n"
           "# TYPE sluice_quota_request_time_seconds_total counter\n";
    for (std::size_t f = 0; f < quota_front_count; ++f) {
        out += "sluice_quota_request_time_seconds_total{" +
               metrics_registry::format_labels({{"front", std::string(front_names[f])}}) + "} " +
               fmt::format("{}", static_cast<double>(busy_ns_[f].load(std::memory_order_relaxed)) /
                                     1e9) +
               "\n";
    }
}

}  // namespace sluice::gateway
