// The consumer group coordinator (owned by backend/group): classic groups (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup), KIP-848 consumer groups (ConsumerGroupHeartbeat),
// committed offsets, group administration, and the lag view. This single broker coordinates
// every group. It is the native backend's api::groups (backend/api/groups.h): the fronts call
// it through that interface only; the transaction coordinator uses the transactional-offset
// members below, and unit tests the callback and synchronous forms.
//
//   fronts ──api::groups──> group_coordinator ── check loaded, find the group, lock it ──┐
//                             │                                                           │
//                             │  group_registry: id -> group_entry (one mutex per group) <┘
//                             │      │ the call runs on the locked entry, in one of:
//                             │      ├── classic_groups   JoinGroup, SyncGroup, Heartbeat, Leave
//                             │      ├── consumer_groups  ConsumerGroupHeartbeat, assignors
//                             │      └── offset_store     commits, fetches, deletions, expiry
//                             │                 │ append (entry locked) / flush (no lock)
//                             │                 v
//                             │           __consumer_offsets (log_manager)
//                             └── ticker: each group's next timeout + retention; one
//                                 steady_timer runs the due ones, each under its group's lock
//
// Concurrency: every method may be called from any thread. A call locks the one group it
// works on (a call on several groups, such as DeleteGroups or the views, locks them one at a
// time), does its work without suspending, releases it, and waits (for a rebalance barrier,
// for an fsync) with no lock held: work on one group never waits for another group's.
// Lock order, outermost first:
//   1. a group entry's mutex (never two at once);
//   2. the registry's map mutex, the ticker's mutex, the log's own locks (leaves: held
//      briefly, never while calling out).
// Client-supplied patterns (KIP-848 subscriptions) are compiled with RE2 before the group is
// locked (topic_regex.h; the cache's mutex is a leaf, never taken under a group's lock) and
// matched in time linear in the topic name.
// Nothing else is locked while a group's mutex is held. Callbacks given to the callback-style
// methods (join_group, sync_group) and the pending-transaction predicate are never called
// while any of these locks is held: answers are queued under the group's lock and run after
// its release, by whichever thread released it (the caller's, another member's, the ticker's).
//
// Lifecycle: construct with the log and settings; load() replays __consumer_offsets (or
// start() does it on a loader thread: calls before it finishes fail with coordinator_loading);
// start() arms the ticker; stop() (before the executor's threads stop) answers parked calls,
// cancels the ticker and joins the loader. Calls after stop() fail with
// coordinator_unavailable.
//
// Invariants: the records of one group reach __consumer_offsets in the order their changes
// are applied (appended under the group's lock). An offset commit, a group deletion and an
// offset deletion are answered only once their records are flushed; a SyncGroup assignment
// too. Group state written by timeouts (a member expired) is flushed with the next write, or
// at shutdown. Timeouts run only on the ticker (or run_timers()), under their group's lock.
// Every parked JoinGroup and SyncGroup is answered, at the latest by stop().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "backend/api/groups.h"
#include "backend/group/assignor.h"  // known_assignor: the names consumer_assignors may hold
#include "backend/group/classic_group.h"
#include "backend/group/classic_groups.h"
#include "backend/group/consumer_groups.h"
#include "backend/group/group_config.h"
#include "backend/group/group_registry.h"
#include "backend/group/offset_store.h"
#include "backend/group/ticker.h"

namespace sluice::backend::log {
class log_manager;
}  // namespace sluice::backend::log

namespace sluice::backend::group {

/// The native backend's consumer groups (api::groups).
class group_coordinator final : public api::groups {
  public:
    group_coordinator(log::log_manager& log, coordinator_config cfg,
                      coordinator_clock clock = coordinator_clock::system());
    ~group_coordinator() override;
    group_coordinator(const group_coordinator&) = delete;
    group_coordinator& operator=(const group_coordinator&) = delete;

    /// Replays __consumer_offsets now, on the calling thread (a no-op once loaded). run_server
    /// calls it before anything else may use the groups (transaction recovery commits offsets).
    void load();
    /// With an executor, arms the ticker that runs timeouts; replays __consumer_offsets first
    /// when load() was not called (on a loader thread unless `synchronous`).
    void start(std::optional<boost::asio::any_io_executor> ticker_executor,
               bool synchronous = false);
    void stop();
    const coordinator_config& config() const { return cfg_; }

    // --- api::groups ----------------------------------------------------------------------------
    bool loaded() const override { return loaded_.load(std::memory_order_acquire); }
    boost::asio::awaitable<api::join_group_result> join_group(api::join_group_request req) override;
    boost::asio::awaitable<api::sync_group_result> sync_group(api::sync_group_request req) override;
    boost::asio::awaitable<api::backend_result<void>> heartbeat(api::heartbeat_request req) override;
    boost::asio::awaitable<api::leave_group_result> leave_group(
        sluice::group_id group, std::vector<api::leave_member> members) override;
    boost::asio::awaitable<api::consumer_heartbeat_result> consumer_heartbeat(
        api::consumer_heartbeat_request req) override;
    boost::asio::awaitable<api::offset_commit_result> commit_offsets(
        api::offset_commit_request req) override;
    boost::asio::awaitable<std::vector<api::offset_fetch_result>> fetch_offsets(
        std::vector<api::offset_fetch_request> reqs) override;
    boost::asio::awaitable<api::offset_delete_result> delete_offsets(
        sluice::group_id group, std::vector<api::topic_partition_list> topics) override;
    boost::asio::awaitable<std::vector<api::group_deletion>> delete_groups(
        std::vector<sluice::group_id> ids) override;
    boost::asio::awaitable<std::vector<api::listed_group>> list_groups(
        std::vector<std::string> states, std::vector<std::string> types) override;
    boost::asio::awaitable<std::vector<api::described_group>> describe_groups(
        std::vector<sluice::group_id> ids) override;
    boost::asio::awaitable<std::vector<api::consumer_group_description>> describe_consumer_groups(
        std::vector<sluice::group_id> ids) override;
    /// Every group with members, assignments, committed offsets and lag (the HTTP front and
    /// the metrics collector). Each group is a consistent snapshot; the list is not one.
    std::vector<api::group_view> view_groups() override;
    std::optional<api::group_view> view_group(const sluice::group_id& id) override;
    /// Rebalances completed and offsets committed since start (metrics).
    api::group_counters counters() const override;
    api::backend_result<void> set_group_configs(const sluice::group_id& group,
                                              std::map<std::string, std::string> configs,
                                              bool validate_only) override;
    std::vector<api::config_entry> describe_group_configs(
        const sluice::group_id& group) const override;

    // --- callback / synchronous forms (the awaitable API wraps them; unit tests drive them) ---
    /// `done` runs once, with no lock of the coordinator held: at once, or when the
    /// rebalance barrier completes (possibly on another member's thread or the ticker's).
    void join_group(api::join_group_request req, join_callback done);
    void sync_group(api::sync_group_request req, sync_callback done);
    std::error_code heartbeat_now(const api::heartbeat_request& req);
    api::leave_group_result leave_group_now(const sluice::group_id& group,
                                            const std::vector<api::leave_member>& members);
    api::consumer_heartbeat_result consumer_heartbeat_now(
        const api::consumer_heartbeat_request& req);
    /// Validates and appends; the records still need flushing (flush_group).
    api::offset_commit_result commit_offsets_now(const api::offset_commit_request& req);
    std::vector<api::offset_fetch_result> fetch_offsets_now(
        const std::vector<api::offset_fetch_request>& reqs);
    std::vector<api::group_deletion> delete_groups_now(const std::vector<sluice::group_id>& ids);
    api::offset_delete_result delete_offsets_now(
        const sluice::group_id& group, const std::vector<api::topic_partition_list>& topics);
    std::vector<api::listed_group> list_groups_now(const std::vector<std::string>& states_filter,
                                                   const std::vector<std::string>& types_filter);
    std::vector<api::described_group> describe_groups_now(const std::vector<sluice::group_id>& ids);
    std::vector<api::consumer_group_description> describe_consumer_groups_now(
        const std::vector<sluice::group_id>& ids);

    /// Runs the timeouts due now (the ticker calls it; tests call it with a manual clock).
    void run_timers();
    /// Expires offsets by offsets.retention, one group at a time (the retention pass).
    void expire_offsets();

    // --- transactional offsets (the transaction coordinator calls these) -------------------
    /// TxnOffsetCommit's membership check (KIP-447): as OffsetCommit, except that a group
    /// rebalancing still accepts it and a stale KIP-848 epoch is ILLEGAL_GENERATION.
    std::error_code validate_txn_commit(const sluice::group_id& group, const std::string& member_id,
                                        const std::optional<std::string>& group_instance_id,
                                        std::int32_t generation_id);
    /// Stores the offsets of a committed transaction (no membership check); completes once
    /// they are durable.
    boost::asio::awaitable<std::error_code> commit_txn_offsets(
        sluice::group_id group, std::vector<api::commit_topic> topics);
    /// Tells whether an open transaction holds offsets of a group's partition: OffsetFetch
    /// with require_stable then answers UNSTABLE_OFFSET_COMMIT for it. Set once, before start;
    /// called with no lock of the coordinator held.
    void set_pending_txn_offsets(
        std::function<bool(const sluice::group_id&, const sluice::topic_name&, partition_id)>
            pending) {
        pending_txn_offsets_ = std::move(pending);
    }

    /// Completes once the offsets partition that holds `group` is durable up to its end.
    boost::asio::awaitable<std::error_code> flush_group(sluice::group_id group);

  private:
    std::error_code check_loaded() const;
    std::error_code validate_commit(group_entry& e, const api::offset_commit_request& req,
                                    bool transactional);
    void mark_unstable(std::vector<api::offset_fetch_result>& results,
                       const std::vector<api::offset_fetch_request>& reqs) const;
    std::vector<api::group_view> build_views(const std::vector<std::string>& ids);
    std::int64_t mono() const { return clock_.mono(); }

    log::log_manager& log_;
    const coordinator_config cfg_;
    const coordinator_clock clock_;

    /// The views' memo of the timestamp of the batch at a lagging group's committed offset
    /// (lag in seconds): a batch's timestamp does not change, so while the offset stays, a
    /// scrape of /metrics or a console poll reads no segment for it. Each build_views keeps
    /// only the entries it used (one per partition and committed offset in use).
    struct lag_time_key {
        const log::partition_log* partition;
        std::int64_t offset;
        auto operator<=>(const lag_time_key&) const = default;
    };
    struct lag_time {
        std::weak_ptr<log::partition_log> partition;  // the address is only reused once expired
        std::int64_t timestamp;
    };
    std::mutex lag_times_mutex_;
    std::map<lag_time_key, lag_time> lag_times_;

    std::atomic<std::uint64_t> rebalances_{0};
    ticker ticker_;
    group_registry registry_{ticker_};
    offset_store store_{log_, cfg_, clock_};
    classic_groups classic_{cfg_, clock_, store_, rebalances_};
    group_config_table group_configs_;
    consumer_groups consumer_{log_, cfg_, clock_, store_, rebalances_, group_configs_};

    std::atomic<bool> loaded_{false};
    std::atomic<bool> stopping_{false};
    std::thread loader_;
    std::function<bool(const sluice::group_id&, const sluice::topic_name&, partition_id)>
        pending_txn_offsets_;
};

}  // namespace sluice::backend::group
