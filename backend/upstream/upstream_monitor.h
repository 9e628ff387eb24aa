// What the upstream client level knows about its cluster's health and reports as statistics
// (owned by backend/upstream): readiness for /readyz (a metadata request that succeeded
// recently, and no "all brokers down" since), librdkafka's statistics JSON in api terms, and a
// count of failed calls by errc name.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
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
/// the handle ("producer", "consumer:<group>"). A document that does not parse gives a handle
/// without brokers.
api::client::stats::handle parse_statistics(std::string_view name, std::string_view json);

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
    api::client::stats statistics() const;

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
};

}  // namespace sluice::backend::upstream
