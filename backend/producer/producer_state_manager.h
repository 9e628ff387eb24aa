// The producer state of every partition (owned by backend/producer): loads a partition's state
// on first use from its newest snapshot plus a replay of the log after it, writes snapshots in
// the background and at shutdown so that start-up does not rescan whole logs, and expires idle
// producer ids (producer.id.expiration.ms).
//
//   produce / fetch / markers ──state_for(log)──> producer_state_manager
//                                                   │ slot per partition folder (weak log ref)
//                                                   ├── load: newest <end>.snapshot ≤ log end,
//                                                   │         then partition_log::replay()
//                                                   └── maintenance thread: snapshots of changed
//                                                       states, expiry, old snapshots removed
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "backend/io/file.h"
#include "backend/log/log_env.h"
#include "backend/producer/producer_state.h"
#include "protocol/core/result.h"

namespace sluice::backend::log {
class log_manager;
class partition_log;
}  // namespace sluice::backend::log

namespace sluice::backend::producer {

/// Settings, with Kafka's names where Kafka has one.
struct producer_state_settings {
    std::int64_t producer_id_expiration_ms = 86400000;            // producer.id.expiration.ms
    std::int64_t expiration_check_interval_ms = 600000;  // producer.id.expiration.check.interval.ms
    /// How often changed states are snapshotted (sluice: producer.state.snapshot.interval.ms).
    std::int64_t snapshot_interval_ms = 60000;
    /// Snapshots kept per partition (the newest ones).
    std::size_t snapshots_to_keep = 2;
};

/// Lifecycle: construct with the log manager and the file system the log uses; start() drops
/// snapshots that lie past their partition's end (a power loss cut the log below them) and
/// starts the maintenance thread; stop() joins it and snapshots every changed state (call it
/// before log_manager::close(), after the last append).
/// Concurrency: thread-safe. state_for() may block on disk reads the first time a partition is
/// used (the snapshot and the log after it); later calls only take a short lock.
class producer_state_manager {
public:
    producer_state_manager(log::log_manager& log, std::shared_ptr<io::file_system> fs,
                           producer_state_settings settings, log::clock_fn clock);
    ~producer_state_manager();
    producer_state_manager(const producer_state_manager&) = delete;
    producer_state_manager& operator=(const producer_state_manager&) = delete;

    void start(bool maintenance_thread = true);
    void stop();

    /// The state of `log`, loaded on first use. Errors: storage_error (the log could not be
    /// replayed).
    result<std::shared_ptr<partition_producer_state>> state_for(
        const std::shared_ptr<log::partition_log>& log);

    /// Writes a snapshot of every loaded state that changed since its last one. Returns how
    /// many were written.
    std::size_t write_snapshots();
    /// Removes producers idle longer than producer.id.expiration.ms. Returns how many.
    std::size_t expire_producers();

    const producer_state_settings& settings() const { return settings_; }

private:
    struct slot {
        std::weak_ptr<log::partition_log> log;
        std::mutex load_mu;
        std::shared_ptr<partition_producer_state> state;
    };

    result<std::shared_ptr<partition_producer_state>> load(log::partition_log& log);
    result<void> write_snapshot(log::partition_log& log, partition_producer_state& st);
    void remove_stray_snapshots();
    void maintenance_loop();

    log::log_manager& log_;
    const std::shared_ptr<io::file_system> fs_;
    const producer_state_settings settings_;
    const log::clock_fn clock_;

    std::mutex mu_;  // guards slots_
    std::map<std::string, std::shared_ptr<slot>> slots_;  // by partition folder

    std::mutex bg_mu_;
    std::condition_variable bg_cv_;
    bool bg_stop_ = false;
    std::thread bg_;
    std::mutex snapshot_mu_;  // one snapshot pass at a time
};

/// "<20 digits>.snapshot" -> end offset.
std::optional<std::int64_t> parse_snapshot_name(std::string_view name);
std::string snapshot_file_name(std::int64_t end);

}  // namespace sluice::backend::producer
