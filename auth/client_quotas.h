// Client quotas (Kafka's ClientQuotaManager, KIP-13, KIP-124, KIP-546): per user and client-id
// limits on produce bytes/s, fetch bytes/s and request time, the rate each entity uses over a
// sliding window of samples, and the throttle time a request that goes over earns. Every front
// (Kafka, HTTP, WebSocket, SSE, SQS) records against the same quotas; DescribeClientQuotas and
// AlterClientQuotas read and change them. Owned by run_server, shared by every connection.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace sluice::auth {

/// The quota keys, in Kafka's names.
enum class quota_kind : std::uint8_t {
    producer_byte_rate = 0,  // bytes/s of record batches produced
    consumer_byte_rate = 1,  // bytes/s of record batches fetched
    request_percentage = 2,  // handler time as a percentage of one io thread
};
inline constexpr std::size_t quota_kind_count = 3;

std::string_view to_string(quota_kind k);
/// producer_byte_rate and consumer_byte_rate (bytes/s; request_percentage is a percentage).
inline bool is_byte_rate(quota_kind k) {
    return k == quota_kind::producer_byte_rate || k == quota_kind::consumer_byte_rate;
}
std::optional<quota_kind> parse_quota_kind(std::string_view key);

/// One component (user or client-id) of a quota entity.
struct entity_part {
    bool present = false;             // the entity has this component at all
    std::optional<std::string> name;  // nullopt: the default entity ("<default>")

    static entity_part named(std::string n) { return {true, std::move(n)}; }
    static entity_part default_entity() { return {true, std::nullopt}; }
    auto operator<=>(const entity_part&) const = default;
};

/// What a quota is set on: /users/U, /users/U/clients/C, /clients/C, each part possibly the
/// default. Kafka also has "ip" entities (connection rates), which sluice does not serve.
/// An entity part as the quotas file and the _sluice_security records write it: "-" (absent),
/// "<default>", or "=" and the name with encode_field's escapes; and its inverse (nullopt when
/// malformed).
std::string entity_part_text(const entity_part& p);
std::optional<entity_part> parse_entity_part(std::string_view s);

struct quota_entity {
    entity_part user;
    entity_part client_id;
    auto operator<=>(const quota_entity&) const = default;
};

/// "user=alice, client-id=<default>", as kafka-configs prints an entity.
std::string describe(const quota_entity& e);

/// The values set on one entity; nullopt: not set there.
using quota_values = std::array<std::optional<double>, quota_kind_count>;

/// The rate of one quantity over a sliding window of `samples` samples of `window` each
/// (Kafka's Rate over SampledStat). A sample starts at the first record after the previous one
/// ended; samples older than samples * window are dropped. The rate is the total of the kept
/// samples over the time since the oldest one started, at least one window (so the first
/// second allows one second's worth, not Kafka's (samples - 1) windows' worth at once).
/// Not thread-safe.
class rate_sampler {
public:
    using clock = std::chrono::steady_clock;

    rate_sampler(int samples, std::chrono::milliseconds window);

    void record(double amount, clock::time_point now);
    /// Units per second.
    double rate(clock::time_point now);
    /// The time the rate is measured over (at least one window).
    std::chrono::milliseconds span(clock::time_point now);
    /// No sample is kept any more: the sampler can be dropped.
    bool idle(clock::time_point now) const;
    /// What may still be recorded now without going over `quota` per second (can be <= 0).
    double headroom(double quota, clock::time_point now);

private:
    struct sample {
        clock::time_point start;
        double total = 0;
    };
    void purge(clock::time_point now);

    int samples_;
    std::chrono::milliseconds window_;
    std::vector<sample> kept_;  // oldest first, at most samples_
};

/// Kafka's throttle time for a measured `rate` over `quota` (QuotaUtils.throttleTime): how long
/// the entity must stay silent for its rate over `span` to fall back to the quota,
/// (rate - quota) / quota * span, at most `cap`; zero when within the quota.
std::chrono::milliseconds throttle_time(double rate, double quota, std::chrono::milliseconds span,
                                        std::chrono::milliseconds cap);

/// quota.* settings of the configuration file.
struct quota_settings {
    int samples = 11;                              // quota.window.num
    std::chrono::milliseconds window{1000};        // quota.window.size.seconds
    /// quota.producer.default / quota.consumer.default (Kafka's old broker settings): the
    /// value of the /clients/<default> entity when the quota file sets none there.
    std::optional<double> producer_default;
    std::optional<double> consumer_default;
};

/// Why an AlterClientQuotas entry or a DescribeClientQuotas filter was refused.
struct quota_error {
    enum class code { invalid_request, invalid_config } what = code::invalid_request;
    std::string message;
};

/// One component of a DescribeClientQuotas filter (wire values).
struct quota_filter_component {
    std::string entity_type;  // "user" or "client-id"
    std::int8_t match_type = 0;  // 0 exact `match`, 1 the default, 2 any specified name
    std::optional<std::string> match;
};

/// One AlterClientQuotas op.
struct quota_op {
    std::string key;
    double value = 0;
    bool remove = false;
};

/// The entity of a request's (type, name) pairs: "user" and "client-id" at most once each, a
/// null name the default. Unknown types (and "ip") are INVALID_REQUEST.
std::optional<quota_error> parse_entity(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& parts,
    quota_entity& out);

/// The quotas of one data directory and the rates every entity uses.
///
/// File DATA_DIR/quotas (text, one value a line, fields as in auth/text_fields.h):
///   # comment lines and blank lines are ignored
///   sluice-quotas 1
///   quota USER CLIENT KEY VALUE
/// USER and CLIENT are "-" (the entity has no such part), "<default>", or "=" and the
/// percent-encoded name; KEY is a quota key; VALUE a positive decimal number. Rewritten
/// atomically on every change (write_private_file).
///
/// Which quota applies to a request of user U with client-id C, per key (Kafka's precedence):
///   /users/U/clients/C, /users/U/clients/<default>, /users/U,
///   /users/<default>/clients/C, /users/<default>/clients/<default>, /users/<default>,
///   /clients/C, /clients/<default>, then quota.producer.default / quota.consumer.default.
/// The rate is kept per user when the quota found names a user part, per client-id when it
/// names a client-id part (so /users/alice is shared by all of alice's clients, and
/// /users/<default> gives each user its own).
///
/// Concurrency: thread-safe (one mutex). With no quota at all, record() returns at once.
class client_quotas {
public:
    using clock = rate_sampler::clock;

    /// Loads `file` (a missing file is no quotas; an empty path: none, and nothing is ever
    /// written). Throws std::runtime_error naming the file
    /// and line when it cannot be read or does not parse.
    client_quotas(quota_settings settings, std::filesystem::path file);

    /// The file name inside a data directory.
    static std::filesystem::path path_in(const std::filesystem::path& data_dir);

    const quota_settings& settings() const { return settings_; }
    /// Any quota set (in the file or the settings).
    bool any() const { return any_.load(std::memory_order_relaxed); }

    /// The quota of `kind` that applies to (user, client_id) and the entity it is set on.
    struct bound {
        double value = 0;
        quota_entity entity;
    };
    std::optional<bound> find(quota_kind kind, std::string_view user,
                              std::string_view client_id) const;

    /// Adds `amount` to the rate of the entity (user, client_id) uses for `kind`; returns the
    /// throttle time it earned (zero: within its quota, or no quota).
    std::chrono::milliseconds record(quota_kind kind, std::string_view user,
                                     std::string_view client_id, double amount,
                                     clock::time_point now = clock::now());
    /// The throttle time the entity has now, recording nothing (a fetch already over its
    /// quota is answered empty).
    std::chrono::milliseconds throttle_now(quota_kind kind, std::string_view user,
                                           std::string_view client_id,
                                           clock::time_point now = clock::now());
    /// What the entity may still use now without going over its quota (the most one fetch
    /// response should carry; <= 0 when it is at or over), or nullopt when no quota applies.
    std::optional<double> headroom(quota_kind kind, std::string_view user,
                                   std::string_view client_id,
                                   clock::time_point now = clock::now());

    /// DescribeClientQuotas: the entities the filter matches with their values, or why the
    /// filter is invalid.
    struct described {
        quota_entity entity;
        std::vector<std::pair<quota_kind, double>> values;
    };
    std::optional<quota_error> describe(const std::vector<quota_filter_component>& filter,
                                        bool strict, std::vector<described>& out) const;

    /// Why `ops` cannot be applied to an entity (unknown key, a value that is not a positive
    /// number, a byte rate that is not whole), or nullopt.
    static std::optional<quota_error> validate(const std::vector<quota_op>& ops);
    /// AlterClientQuotas: applies each entry's ops (all entries already validated) and
    /// persists before it returns; throws std::runtime_error when the file cannot be written
    /// (nothing changes then).
    void alter(const std::vector<std::pair<quota_entity, std::vector<quota_op>>>& entries);

    /// Every entity with a value, sorted.
    std::map<quota_entity, quota_values> entries() const;
    /// Replaces every entity's values at once (upstream mode: the cluster's quotas, from its
    /// _sluice_security topic). Nothing is saved.
    void replace_entries(std::map<quota_entity, quota_values> entries);

private:
    using sensor_key = std::tuple<quota_kind, std::string, std::string>;

    void load();
    void save(const std::map<quota_entity, quota_values>& entries) const;
    void update_any();
    std::optional<bound> find_locked(quota_kind kind, std::string_view user,
                                     std::string_view client_id) const;
    rate_sampler* sampler_for(quota_kind kind, const bound& b, std::string_view user,
                              std::string_view client_id, bool create, clock::time_point now);
    /// record (with an amount) and throttle_now (without one).
    std::chrono::milliseconds throttle_after(quota_kind kind, std::string_view user,
                                             std::string_view client_id,
                                             std::optional<double> amount, clock::time_point now);

    quota_settings settings_;
    std::filesystem::path file_;
    mutable std::mutex mutex_;
    std::atomic<bool> any_{false};
    std::map<quota_entity, quota_values> entries_;
    std::map<sensor_key, rate_sampler> sensors_;
    clock::time_point last_sweep_{};
};

}  // namespace sluice::auth
