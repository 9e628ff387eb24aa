// The state of one group that uses the KIP-848 consumer protocol (ConsumerGroupHeartbeat),
// owned by the group coordinator (backend/group).
//
// The group epoch moves when membership or subscriptions change; the target assignment is
// recomputed (server-side assignor) for the group epoch; each member then converges to its
// target one heartbeat at a time (reconcile()):
//
//   member epoch < target ──owns partitions now assigned elsewhere──> UnrevokedPartitions
//        │                        (keeps its epoch until it reports them gone)
//        └──> target epoch: Stable, or UnreleasedPartitions while a partition it should get is
//             still owned by another member (it receives it once freed)
//
// Invariants: partition_epochs holds, for every partition some member owns (assigned or
// pending revocation), that member's epoch, so a partition is never given to two members.
// static_members maps instance ids to member ids. Group states: Empty (no members),
// Assigning (target older than the group epoch), Reconciling (a member not at the target),
// Stable.
//
// Concurrency: not thread-safe; used under its group entry's lock (group_registry.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/api/groups.h"
#include "backend/group/assignor.h"
#include "backend/group/group_records.h"
#include "backend/group/topic_regex.h"

namespace sluice::backend::group {

/// KIP-848 epochs a member sends to leave: -1 leaves, -2 leaves for now (static members).
constexpr std::int32_t leave_group_member_epoch = -1;
constexpr std::int32_t leave_group_static_member_epoch = -2;

struct consumer_member {
    std::string member_id;
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    std::string client_id;
    std::string client_host;
    std::int32_t member_epoch = 0;
    std::int32_t previous_member_epoch = -1;
    member_state state = member_state::stable;
    std::int32_t rebalance_timeout_ms = 0;
    std::vector<std::string> subscribed_topic_names;
    std::optional<std::string> subscribed_topic_regex;  // empty string means none
    std::shared_ptr<const topic_regex> subscribed_regex;  // compiled; null without a pattern
    std::optional<std::string> server_assignor;
    topic_partitions assigned;
    topic_partitions pending_revocation;
};

class consumer_group {
public:
    consumer_group(std::string id, std::int64_t now_ms) : id_(std::move(id)), state_since_ms_(now_ms) {}

    const std::string& id() const { return id_; }
    std::int32_t group_epoch() const { return group_epoch_; }
    void set_group_epoch(std::int32_t e) { group_epoch_ = e; }
    std::int32_t assignment_epoch() const { return assignment_epoch_; }

    std::map<std::string, consumer_member>& members() { return members_; }
    const std::map<std::string, consumer_member>& members() const { return members_; }
    consumer_member* member(const std::string& id);
    bool empty() const { return members_.empty(); }
    std::optional<std::string> static_member_id(const std::string& instance_id) const;

    /// Adds or replaces a member (keeping the static index and partition ownership right).
    void upsert(consumer_member m);
    /// Removes a member, freeing its partitions and its target assignment.
    void remove(const std::string& member_id);

    const std::map<std::string, topic_partitions>& target_assignment() const { return target_; }
    const topic_partitions& target_of(const std::string& member_id) const;
    void set_target_assignment(std::int32_t epoch, std::map<std::string, topic_partitions> t);
    /// Replay: one member's target, and the epoch of the target assignment.
    void set_target_of(const std::string& member_id, topic_partitions t) {
        target_[member_id] = std::move(t);
    }
    void erase_target_of(const std::string& member_id) { target_.erase(member_id); }
    void set_assignment_epoch(std::int32_t e) { assignment_epoch_ = e; }
    /// Moves a target assignment from one member id to another (static member replaced).
    void move_target(const std::string& from, const std::string& to);

    /// The epoch of the member owning a partition, or -1 when it is free.
    std::int32_t partition_epoch(const uuid& topic, std::int32_t p) const;

    /// Kafka's names: Empty, Assigning, Reconciling, Stable.
    std::string state() const;
    std::int64_t state_since_ms() const { return state_since_ms_; }
    void touch_state(std::int64_t now_ms) { state_since_ms_ = now_ms; }

    const std::map<std::string, subscribed_topic>& subscription_metadata() const {
        return subscription_metadata_;
    }
    void set_subscription_metadata(std::map<std::string, subscribed_topic> m) {
        subscription_metadata_ = std::move(m);
    }

    /// The assignor most members asked for, else `fallback`.
    std::string preferred_assignor(const std::string& fallback) const;

    /// A write of this group's records failed: the next write is the whole group
    /// (offset_store::store_consumer), so that __consumer_offsets catches up.
    bool needs_full_write() const { return needs_full_write_; }
    void set_needs_full_write(bool v) { needs_full_write_ = v; }
    /// Whether any member subscribes to `topic` (by name or regex match, as resolved into
    /// subscription metadata).
    bool is_subscribed_to(const std::string& topic) const {
        return subscription_metadata_.contains(topic);
    }

    /// One reconciliation step of `m` toward its target (Kafka's CurrentAssignmentBuilder):
    /// `owned` are the partitions the member reports (null: not reported).
    void reconcile(consumer_member& m,
                   const std::optional<std::vector<api::owned_partitions>>& owned);

  private:
    void release(const consumer_member& m);
    void claim(const consumer_member& m);
    void compute_next(consumer_member& m, std::int32_t epoch,
                      const std::optional<std::vector<api::owned_partitions>>& owned);

    std::string id_;
    std::int32_t group_epoch_ = 0;
    std::int32_t assignment_epoch_ = 0;
    std::map<std::string, consumer_member> members_;
    std::map<std::string, std::string> static_members_;
    std::map<std::string, topic_partitions> target_;
    std::map<std::pair<uuid, std::int32_t>, std::int32_t> partition_epochs_;
    std::map<std::string, subscribed_topic> subscription_metadata_;
    std::int64_t state_since_ms_ = 0;
    bool needs_full_write_ = false;
};

}  // namespace sluice::backend::group
