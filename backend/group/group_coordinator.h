// The consumer group coordinator (owned by backend/group): classic groups (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup), KIP-848 consumer groups (ConsumerGroupHeartbeat),
// committed offsets, group administration, and the lag view. This single broker coordinates
// every group. It is the native backend's api::groups (backend/api/groups.h): the fronts call
// it through that interface only; the transaction coordinator uses the transactional-offset
// members below, and unit tests the callback and synchronous forms.
//
//   Kafka handlers ──awaitable calls──> group_coordinator ──append/flush_to──> __consumer_offsets
//   HTTP / metrics ──views────────────────>   │  (mutex)                        (log_manager)
//                                             ├── groups: classic_group | consumer_group,
//                                             │           committed offsets per partition
//                                             └── timer_queue ──> one steady_timer (ticker)
//
// Concurrency: one mutex guards every group, every committed offset and the timer queue.
// Each call does its work under it without suspending (appends to the offsets log included,
// so records reach the log in the order they are applied), then waits outside it: a parked
// JoinGroup/SyncGroup waits on a completion slot that whoever completes the barrier (another
// member's call, or a timeout) fills; a write waits for the offsets partition's group-commit
// fsync (flush_to). Timeouts run on the ticker, a steady_timer on the executor given to
// start(), which takes the same mutex. Callbacks given to the callback-style methods run under
// the mutex and must not call back into the coordinator.
//
// Lifecycle: construct with the log and settings; load() replays __consumer_offsets (or
// start() does it on a loader thread: calls before it finishes fail with coordinator_loading);
// start() arms the ticker; stop() (before the executor's threads stop) answers parked calls,
// cancels the ticker and joins the loader.
//
// Durability: an offset commit, a group deletion and an offset deletion are answered only
// once their records are flushed. Group state written by timeouts (a member expired) is
// flushed with the next write, or at shutdown.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "backend/api/groups.h"
#include "backend/group/assignor.h"
#include "backend/group/classic_group.h"
#include "backend/group/consumer_group.h"
#include "backend/group/group_records.h"
#include "backend/group/timer_queue.h"
#include "protocol/core/result.h"

namespace sluice::backend::log {
class log_manager;
class partition_log;
}  // namespace sluice::backend::log

namespace sluice::backend::group {

/// Settings, with Kafka's names and defaults.
struct coordinator_config {
    std::int32_t min_session_timeout_ms = 6000;         // group.min.session.timeout.ms
    std::int32_t max_session_timeout_ms = 1800000;      // group.max.session.timeout.ms
    std::int32_t initial_rebalance_delay_ms = 3000;     // group.initial.rebalance.delay.ms
    std::int32_t max_size = 2147483647;                 // group.max.size
    std::int32_t new_member_join_timeout_ms = 300000;   // group.classic.new.member.join.timeout.ms
    std::int64_t offsets_retention_ms = 10080LL * 60000;  // offsets.retention.minutes
    std::int64_t offsets_retention_check_interval_ms = 600000;  // offsets.retention.check.interval.ms
    std::int32_t offset_metadata_max_bytes = 4096;      // offset.metadata.max.bytes
    std::int32_t offsets_topic_partitions = 1;          // offsets.topic.num.partitions
    std::int32_t offsets_topic_segment_bytes = 104857600;  // offsets.topic.segment.bytes
    std::int32_t consumer_heartbeat_interval_ms = 5000;  // group.consumer.heartbeat.interval.ms
    std::int32_t consumer_session_timeout_ms = 45000;    // group.consumer.session.timeout.ms
    std::int32_t consumer_max_size = 2147483647;         // group.consumer.max.size
    std::vector<std::string> consumer_assignors = {"uniform", "range"};  // group.consumer.assignors
};

/// Milliseconds: `wall` since the Unix epoch (commit timestamps), `mono` for timeouts.
struct coordinator_clock {
    std::function<std::int64_t()> wall;
    std::function<std::int64_t()> mono;
    static coordinator_clock system();
};

/// The internal topic the coordinator keeps its state in.
inline constexpr const char* offsets_topic_name = "__consumer_offsets";

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
    boost::asio::awaitable<std::error_code> heartbeat(api::heartbeat_request req) override;
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
    /// the metrics collector).
    std::vector<api::group_view> view_groups() override;
    std::optional<api::group_view> view_group(const sluice::group_id& id) override;
    /// Rebalances completed and offsets committed since start (metrics).
    api::group_counters counters() const override;

    // --- callback / synchronous forms (the awaitable API wraps them; unit tests drive them) ---
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
    /// Expires offsets by offsets.retention (the retention timer calls it).
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
    /// with require_stable then answers UNSTABLE_OFFSET_COMMIT for it. Set once, before start.
    void set_pending_txn_offsets(
        std::function<bool(const sluice::group_id&, const sluice::topic_name&, partition_id)>
            pending) {
        pending_txn_offsets_ = std::move(pending);
    }

    /// Completes once the offsets partition that holds `group` is durable up to its end.
    boost::asio::awaitable<std::error_code> flush_group(sluice::group_id group);

  private:
    struct group_entry {
        group_kind kind = group_kind::classic;
        std::unique_ptr<classic_group> classic;
        std::unique_ptr<consumer_group> consumer;
        std::map<std::string, std::map<std::int32_t, committed_offset>> offsets;
    };

    std::vector<api::group_view> build_views(const std::vector<std::string>& ids);

    // storage (group_coordinator_store.cc)
    void apply_record(std::map<std::string, group_entry>& groups, const record_key& key,
                      std::optional<protocol::bytes_view> value);
    std::shared_ptr<log::partition_log> offsets_partition(const std::string& group_id,
                                                          bool create);
    result<void> append_locked(const std::string& group_id, std::vector<encoded_record> records);
    void store_group_locked(const std::string& group_id);

    // timers (group_coordinator.cc)
    void arm_locked();
    void on_tick(const boost::system::error_code& ec);
    std::int64_t mono() const { return clock_.mono(); }
    std::int64_t wall() const { return clock_.wall(); }
    std::error_code check_loaded() const;
    group_entry* find_locked(const std::string& group_id);
    void maybe_drop_group_locked(const std::string& group_id);

    // classic protocol (group_coordinator_classic.cc)
    classic_group* classic_locked(const std::string& group_id, bool create);
    void join_new_member_locked(classic_group& g, api::join_group_request& req,
                                join_callback& done);
    void join_existing_member_locked(classic_group& g, api::join_group_request& req,
                                     join_callback& done);
    void add_member_and_rebalance_locked(classic_group& g, api::join_group_request& req,
                                         const std::string& member_id, join_callback done);
    void update_static_member_locked(classic_group& g, api::join_group_request& req,
                                     const std::string& old_id, const std::string& new_id,
                                     join_callback done);
    void update_member_and_rebalance_locked(classic_group& g, classic_member& m,
                                            api::join_group_request& req, join_callback done,
                                            const std::string& reason);
    void maybe_prepare_rebalance_locked(classic_group& g, const std::string& reason);
    void prepare_rebalance_locked(classic_group& g, const std::string& reason);
    void maybe_complete_join_locked(classic_group& g);
    void complete_join_locked(const std::string& group_id);
    void initial_rebalance_step_locked(const std::string& group_id, std::int32_t delay_ms,
                                       std::int32_t remaining_ms);
    void expire_member_locked(const std::string& group_id, const std::string& member_id);
    void remove_member_and_update_locked(classic_group& g, const std::string& member_id,
                                         const std::string& reason);
    void expire_pending_sync_locked(const std::string& group_id, std::int32_t generation);
    void reschedule_heartbeat_locked(classic_group& g, const classic_member& m,
                                     std::int64_t timeout_ms);
    void propagate_assignment_locked(classic_group& g, std::error_code error);
    bool accept_joining_member(const classic_group& g, const std::string& member_id) const;

    // KIP-848 protocol (group_coordinator_consumer.cc)
    api::consumer_heartbeat_result consumer_leave_locked(
        const api::consumer_heartbeat_request& req);
    std::map<std::string, subscribed_topic> subscription_metadata_locked(const consumer_group& g,
                                                                         const consumer_member* extra);
    void compute_target_locked(consumer_group& g);
    void fence_consumer_member_locked(const std::string& group_id, const std::string& member_id,
                                      const std::string& why);
    void schedule_consumer_session_locked(const consumer_group& g, const consumer_member& m);
    std::optional<std::vector<api::owned_partitions>> to_owned(const topic_partitions& tp) const;
    void cancel_consumer_timers_locked(const std::string& group_id);

    // offsets (group_coordinator_offsets.cc)
    std::error_code validate_commit_locked(group_entry* e, const api::offset_commit_request& req,
                                           bool transactional);
    void expire_offsets_locked();
    void schedule_retention_locked();

    log::log_manager& log_;
    const coordinator_config cfg_;
    const coordinator_clock clock_;

    mutable std::mutex mu_;
    std::map<std::string, group_entry> groups_;
    timer_queue timers_;
    std::atomic<bool> loaded_{false};
    bool stopping_ = false;
    std::int64_t armed_at_ = -1;  // deadline the ticker waits for, -1 when idle

    std::optional<boost::asio::any_io_executor> ticker_ex_;
    std::unique_ptr<boost::asio::steady_timer> ticker_;
    std::thread loader_;

    std::function<bool(const sluice::group_id&, const sluice::topic_name&, partition_id)>
        pending_txn_offsets_;
    std::atomic<std::uint64_t> rebalances_{0};
    std::atomic<std::uint64_t> commits_{0};
};

}  // namespace sluice::backend::group
