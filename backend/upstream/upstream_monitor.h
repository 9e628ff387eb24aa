// What the upstream client level knows about its cluster's health and reports as statistics
// (owned by backend/upstream): readiness for /readyz (a metadata request that succeeded
// recently, and no "all brokers down" since), librdkafka's statistics JSON in api terms, and a
// count of failed calls by errc name.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <librdkafka/rdkafka.h>

#include "backend/api/client.h"

namespace sluice::backend::upstream {

/// The name of an api::errc value ("request_timed_out").
std::string_view errc_name(api::errc e) noexcept;

/// One librdkafka statistics JSON document (stats_cb) in api terms: every configured or learned
/// broker (internal and logical ones left out, sorted by node id) and msg_cnt. `name` labels
/// the handle ("producer", "consumers"). A document that does not parse gives a handle
/// without brokers.
api::client::stats::handle parse_statistics(std::string_view name, std::string_view json);

/// The statistics of a client level's consumer handles (one librdkafka consumer per
/// api::consumer, opened and closed as fronts come and go), reported as one handle
/// "consumers": per broker, requests and request errors summed over the live consumers and
/// those closed (the counters never go back when a consumer closes), the connection UP when
/// any live consumer's is, rtt and throttle the largest of the live consumers', queued
/// messages summed.
///
/// Lifecycle: made by the monitor, shared with every consumer (which may be released after the
/// client). Concurrency: thread-safe (one mutex; fed every statistics.interval.ms per
/// consumer from librdkafka's callback, read by statistics()).
class consumer_statistics {
  public:
    /// An id for a new consumer's reports.
    std::uint64_t add();
    /// librdkafka's stats_cb of consumer `id`.
    void on_statistics(std::uint64_t id, std::string_view json);
    /// Consumer `id` destroyed its handle: its last counts stay in the totals. Idempotent.
    void closed(std::uint64_t id);
    /// The "consumers" handle; nullopt before any consumer reported.
    std::optional<api::client::stats::handle> merged() const;

  private:
    mutable std::mutex mu_;
    std::uint64_t next_id_ = 0;
    std::map<std::uint64_t, api::client::stats::handle> live_;
    /// Per broker name: the counts of closed consumers.
    std::map<std::string, api::client::broker_stats> retired_;
    bool reported_ = false;
};

/// Health, statistics and error counts of one upstream client level.
///
/// Lifecycle: owned by the client; librdkafka's callbacks (error_cb, stats_cb) and the health
/// probe feed it from the client's poller and pool threads; check() and statistics() read it
/// from any thread. Concurrency: thread-safe (one mutex; nothing here is on a hot path except
/// count_error, which takes the mutex only for a failure).
class upstream_monitor {
  public:
    using clock = std::chrono::steady_clock;

    /// `bootstrap` names the cluster in reasons; a probe older than `fresh_for` no longer
    /// makes the client ready.
    upstream_monitor(std::string bootstrap, clock::duration fresh_for);

    /// A metadata request succeeded now.
    void probe_succeeded();
    /// A metadata request failed (`reason` from librdkafka).
    void probe_failed(const std::string& reason);
    /// librdkafka's error_cb: transport errors are remembered as the reason; "all brokers
    /// down" makes the client not ready until the next successful probe.
    void on_error(rd_kafka_resp_err_t err, const char* reason);
    /// librdkafka's stats_cb for the handle labelled `name`.
    void on_statistics(const std::string& name, std::string_view json);
    /// A call failed with `e` (counted by its errc name).
    void count_error(const api::backend_error& e);

    api::client::health check() const;
    /// The producer handle's statistics, then the consumers' ("consumers"), and the errors.
    api::client::stats statistics() const;
    /// Where the client's consumers report (handed to each one).
    const std::shared_ptr<consumer_statistics>& consumers() const { return consumers_; }

  private:
    mutable std::mutex mu_;
    std::string bootstrap_;
    clock::duration fresh_for_;
    clock::time_point last_ok_{};
    bool ever_ok_ = false;
    bool all_down_ = false;
    std::string last_reason_;
    std::map<std::string, api::client::stats::handle> handles_;
    std::map<std::string, std::int64_t> errors_;
    std::shared_ptr<consumer_statistics> consumers_ = std::make_shared<consumer_statistics>();
};

}  // namespace sluice::backend::upstream
