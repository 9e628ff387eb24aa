// The KIP-848 consumer group protocol (owned by backend/group): ConsumerGroupHeartbeat on one
// group, with server-side assignment (the group epoch, the target assignment computed by the
// "uniform" or "range" assignor, and each member's reconciliation toward it), session and
// rebalance timeouts, static members, and the membership checks of offset commits and
// fetches. The state it drives is consumer_group; this is the protocol logic over it.
//
// Lifecycle: created by the group coordinator. validate() runs before any lock is taken (it
// compiles a subscription pattern, through the RE2 cache: topic_regex.h); every other method
// requires the caller to hold the group entry's lock and touches that entry only (timeouts
// are scheduled in the entry's own timer_queue and run under the same lock). Topic lookups go
// to the log, which has its own locks; patterns match in time linear in the topic name.
// Persistence: each change appends Kafka's records for what changed (consumer_records.h)
// under the group's lock, in Kafka's order; restore() brings a replayed group back to life.
// Invariants: every member has a session timeout scheduled; a member with partitions to
// revoke has a rebalance timeout scheduled; the target assignment is the one of the group
// epoch once a heartbeat has been served (assignment epoch == group epoch).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <system_error>

#include "backend/api/groups.h"
#include "backend/group/consumer_group.h"
#include "backend/group/group_config.h"
#include "backend/group/group_registry.h"
#include "backend/group/topic_regex.h"

namespace sluice::backend::log {
class log_manager;
}  // namespace sluice::backend::log

namespace sluice::backend::group {

class offset_store;

class consumer_groups {
  public:
    consumer_groups(log::log_manager& log, const coordinator_config& cfg,
                    const coordinator_clock& clock, offset_store& store,
                    std::atomic<std::uint64_t>& rebalances, const group_config_table& configs);

    /// The checks that need no group (compat: throwIfConsumerGroupHeartbeatRequestIsInvalid),
    /// run before any lock is taken: the answer to send when the request is invalid, else
    /// nullopt with the request's pattern compiled into `regex` (null without one).
    std::optional<api::consumer_heartbeat_result> validate(
        const api::consumer_heartbeat_request& req, std::shared_ptr<const topic_regex>& regex);
    /// A valid heartbeat with its compiled pattern. `e` may be vacant: a member with epoch 0
    /// creates the group (and turns an empty classic group into a consumer group).
    api::consumer_heartbeat_result heartbeat(group_entry& e,
                                             const api::consumer_heartbeat_request& req,
                                             std::shared_ptr<const topic_regex> regex);

    /// A group replayed at start (its entry not published yet): compiles the members'
    /// patterns and schedules their session (and rebalance) timeouts.
    void restore(group_entry& e);

    /// The membership check of OffsetCommit (TxnOffsetCommit when `transactional`) in a
    /// KIP-848 group.
    std::error_code validate_commit(group_entry& e, const api::offset_commit_request& req,
                                    bool transactional);
    /// OffsetFetch v9+ with a member: compat: ConsumerGroup.validateOffsetFetch.
    std::error_code validate_fetch(group_entry& e, const api::offset_fetch_request& req);

  private:
    api::consumer_heartbeat_result leave(group_entry& e,
                                         const api::consumer_heartbeat_request& req);
    /// The topics the members subscribe to (by name or pattern) that exist, with their ids
    /// and partition counts.
    std::map<std::string, subscribed_topic> subscription_metadata(const consumer_group& g);
    void compute_target(consumer_group& g);
    void fence_member(group_entry& e, const std::string& member_id, const std::string& why);
    void schedule_session(group_entry& e, const consumer_member& m);
    void schedule_rebalance_timeout(group_entry& e, const consumer_member& m);

    std::int64_t mono() const { return clock_.mono(); }
    std::int64_t wall() const { return clock_.wall(); }

    log::log_manager& log_;
    const coordinator_config& cfg_;
    const coordinator_clock& clock_;
    offset_store& store_;
    std::atomic<std::uint64_t>& rebalances_;
    const group_config_table& configs_;  // each group's own session timeout and heartbeat
    topic_regex_cache regexes_;
};

}  // namespace sluice::backend::group
