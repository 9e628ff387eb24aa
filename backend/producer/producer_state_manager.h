// The producer state of every partition (owned by backend/producer): loads a partition's state
// on first use from its newest snapshot plus a replay of the log after it, writes snapshots in
// the background and at shutdown so that start-up does not rescan whole logs, and expires idle
// producer ids (producer.id.expiration.ms).
//
//   produce / fetch / markers ──state_for(log)──> producer_state_manager
//                                                   │ slot per partition folder (weak log ref)
//                                                   ├── load: newest <end>.snapshot ≤ log end,
//                                                   │         minus what compaction removed,
//                                                   │         then partition_log::replay()
//                                                   └── maintenance thread: snapshots of changed
//                                                       states, expiry, old snapshots removed
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

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
/// used (the snapshot and the log after it); later calls only take a short lock. Code on io
/// threads never calls it: it takes ready_state() (no disk access) or waits for a turn
/// (wait_turn(), which loads on another executor).
///
/// Turns keep the order of appends while a state loads: the first produce to a partition whose
/// state is not loaded waits for the load, and every later one waits behind it, in the order
/// of their wait_turn() calls, each holding the turn while it appends; once the last turn is
/// released the state is "ready" and appends take it without waiting.
class producer_state_manager {
    struct slot;
    struct turn_waiter;

public:
    /// The right to append with one partition's state before the next waiter does; released
    /// on destruction. Movable.
    class turn {
    public:
        turn() = default;
        turn(turn&& o) noexcept { *this = std::move(o); }
        turn& operator=(turn&& o) noexcept;
        ~turn() { release(); }
        partition_producer_state& state() const { return *state_; }
        const std::shared_ptr<partition_producer_state>& shared_state() const { return state_; }

    private:
        friend class producer_state_manager;
        void release();
        producer_state_manager* owner_ = nullptr;
        std::shared_ptr<slot> slot_;  // null: a turn on a ready state (nothing to release)
        std::shared_ptr<partition_producer_state> state_;
        boost::asio::any_io_executor loader_;
    };

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

    /// The state of `log` when it is loaded and no caller waits for a turn on it; nullptr
    /// otherwise. Never touches the disk.
    std::shared_ptr<partition_producer_state> ready_state(
        const std::shared_ptr<log::partition_log>& log);
    /// Waits for a turn on `log`'s state, granted in the order of the calls; the state is
    /// loaded on `loader` (never on the caller's executor) when needed. Resumes on the
    /// caller's executor. Errors: storage_error (the log could not be replayed).
    boost::asio::awaitable<result<turn>> wait_turn(std::shared_ptr<log::partition_log> log,
                                                   boost::asio::any_io_executor loader);

    /// Writes a snapshot of every loaded state that changed since its last one. Returns how
    /// many were written.
    std::size_t write_snapshots();
    /// Removes producers idle longer than producer.id.expiration.ms. Returns how many.
    std::size_t expire_producers();

    const producer_state_settings& settings() const { return settings_; }

private:
    struct turn_waiter {
        virtual ~turn_waiter() = default;
        virtual void complete(result<std::shared_ptr<partition_producer_state>> r) = 0;
    };
    struct slot {
        std::weak_ptr<log::partition_log> log;
        std::mutex load_mu;
        std::shared_ptr<partition_producer_state> state;  // guarded by load_mu
        // Guarded by the manager's mu_:
        std::shared_ptr<partition_producer_state> ready;  // set once no turn is held or awaited
        std::deque<std::unique_ptr<turn_waiter>> waiting;
        bool busy = false;  // a turn is held, or a load for the next one is running
    };

    std::shared_ptr<slot> slot_for(const std::shared_ptr<log::partition_log>& log);
    result<std::shared_ptr<partition_producer_state>> load_slot(slot& s,
                                                                const std::shared_ptr<log::partition_log>& log);
    void grant_next_locked(const std::shared_ptr<slot>& s, const boost::asio::any_io_executor& loader);
    void release_turn(const std::shared_ptr<slot>& s, const boost::asio::any_io_executor& loader);
    result<std::shared_ptr<partition_producer_state>> load(log::partition_log& log);
    // After loading a snapshot, before the replay: drop the aborted transactions whose marker
    // compaction removed since, and end the open ones whose first batch it removed.
    result<void> drop_removed_aborted(log::partition_log& log, partition_producer_state& st);
    result<void> end_lost_transactions(log::partition_log& log, partition_producer_state& st);
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
