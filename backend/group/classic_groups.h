// The classic group protocol (owned by backend/group): JoinGroup, SyncGroup, Heartbeat and
// LeaveGroup on one group, the rebalance barrier and its timeouts (the initial rebalance
// delay, session expiry, the rebalance and sync deadlines), static members, and the
// membership checks of offset commits. The state it drives is classic_group; this is the
// protocol logic over it.
//
// Lifecycle: created by the group coordinator, which hands it each call with the group's
// entry locked. Concurrency: every method requires the caller to hold that entry's lock and
// touches that entry only; timeouts are scheduled in the entry's own timer_queue and run under
// the same lock. Callbacks it is given must be the entry's deferred ones (group_entry::defer):
// they are called under the lock and only queue the answer.
// Invariants: a member with a parked JoinGroup or SyncGroup has a callback that will be called
// exactly once (by the barrier, a timeout, a newer call of the member, its removal, or stop);
// every member and pending member has a heartbeat (session) timeout scheduled.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "backend/api/groups.h"
#include "backend/group/classic_group.h"
#include "backend/group/group_config.h"
#include "backend/group/group_registry.h"

namespace sluice::backend::group {

class offset_store;

class classic_groups {
  public:
    classic_groups(const coordinator_config& cfg, const coordinator_clock& clock,
                   offset_store& store, std::atomic<std::uint64_t>& rebalances);

    /// JoinGroup; `req.group_id` is not empty. `e` may be vacant: a member without id creates
    /// the group.
    void join(group_entry& e, api::join_group_request req, join_callback done);
    void sync(group_entry& e, api::sync_group_request req, sync_callback done);
    std::error_code heartbeat(group_entry& e, const api::heartbeat_request& req);
    api::leave_group_result leave(group_entry& e, const std::vector<api::leave_member>& members);

    /// The membership check of OffsetCommit (and of TxnOffsetCommit when `transactional`) for
    /// a group that is not a KIP-848 group; a group that does not exist yet becomes a
    /// "simple" group when the commit has no generation. A commit keeps a member's session
    /// alive.
    std::error_code validate_commit(group_entry& e, const api::offset_commit_request& req,
                                    bool transactional);

    /// After replay: members restored from the log must heartbeat within their session.
    void restore(group_entry& e);
    /// At stop: answers every parked JoinGroup and SyncGroup with coordinator_unavailable.
    void answer_parked(group_entry& e);

  private:
    classic_group* classic_of(group_entry& e, bool create);
    bool accept_joining_member(const classic_group& g, const std::string& member_id) const;
    void join_new_member(group_entry& e, api::join_group_request& req, join_callback& done);
    void join_existing_member(group_entry& e, api::join_group_request& req, join_callback& done);
    void add_member_and_rebalance(group_entry& e, api::join_group_request& req,
                                  const std::string& member_id, join_callback done);
    void update_static_member(group_entry& e, api::join_group_request& req,
                              const std::string& old_id, const std::string& new_id,
                              join_callback done);
    void update_member_and_rebalance(group_entry& e, classic_member& m,
                                     api::join_group_request& req, join_callback done,
                                     const std::string& reason);
    void maybe_prepare_rebalance(group_entry& e, const std::string& reason);
    void prepare_rebalance(group_entry& e, const std::string& reason);
    void maybe_complete_join(group_entry& e);
    void complete_join(group_entry& e);
    void initial_rebalance_step(group_entry& e, std::int32_t delay_ms, std::int32_t remaining_ms);
    void expire_member(group_entry& e, const std::string& member_id);
    void remove_member_and_update(group_entry& e, const std::string& member_id,
                                  const std::string& reason);
    void expire_pending_sync(group_entry& e, std::int32_t generation);
    void reschedule_heartbeat(group_entry& e, const classic_member& m, std::int64_t timeout_ms);
    void propagate_assignment(group_entry& e, std::error_code error);
    /// Forgets an Empty group that holds nothing (no members, pending members or offsets).
    void maybe_drop(group_entry& e);

    std::int64_t mono() const { return clock_.mono(); }
    std::int64_t wall() const { return clock_.wall(); }

    const coordinator_config& cfg_;
    const coordinator_clock& clock_;
    offset_store& store_;
    std::atomic<std::uint64_t>& rebalances_;
};

}  // namespace sluice::backend::group
