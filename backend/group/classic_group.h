// The state of one group that uses the classic protocol (JoinGroup/SyncGroup/Heartbeat/
// LeaveGroup), owned by the group coordinator (backend/group). Bookkeeping only: the
// coordinator drives the transitions and the timers (classic_groups.cc).
//
//   Empty ──join──> PreparingRebalance ──all joined / timeout──> CompletingRebalance
//     ^                  ^      ^                                      │ leader's SyncGroup
//     └── no members ────┘      └──── join, leave, expiry ─────── Stable <┘
//
// Invariants: every member is in `members`; static_members maps each instance id to its
// member's id; supported_protocols counts, per protocol name, the members offering it;
// num_awaiting_join counts members with a parked JoinGroup; pending_join_members holds ids
// handed out with MEMBER_ID_REQUIRED that have not joined yet (never in `members`).
//
// Concurrency: not thread-safe; used under its group entry's lock (group_registry.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/api/groups.h"
#include "backend/group/group_records.h"

namespace sluice::backend::group {

enum class classic_state { empty, preparing_rebalance, completing_rebalance, stable, dead };

/// Kafka's names (DescribeGroups, ListGroups).
const char* to_string(classic_state s);

using join_callback = std::function<void(api::join_group_result)>;
using sync_callback = std::function<void(api::sync_group_result)>;

struct classic_member {
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::string client_id;
    std::string client_host;
    std::int32_t rebalance_timeout_ms = 0;
    std::int32_t session_timeout_ms = 0;
    std::string protocol_type;
    std::vector<api::protocol_metadata> protocols;
    std::vector<std::byte> assignment;
    join_callback awaiting_join;  // set while a JoinGroup is parked
    sync_callback awaiting_sync;  // set while a SyncGroup is parked
    bool is_new = false;          // joined in the current rebalance, not yet in a generation

    bool awaiting_join_response() const { return static_cast<bool>(awaiting_join); }
    bool awaiting_sync_response() const { return static_cast<bool>(awaiting_sync); }
    /// compat: ClassicGroupMember.hasSatisfiedHeartbeat: members parked in a rebalance are
    /// alive; a new member is not (it cannot heartbeat yet).
    bool has_satisfied_heartbeat() const {
        return !is_new && (awaiting_join_response() || awaiting_sync_response());
    }
    /// Metadata of the named protocol (empty when the member does not offer it).
    const std::vector<std::byte>& metadata(const std::string& protocol) const;
    bool matches(const std::vector<api::protocol_metadata>& other) const {
        return protocols == other;
    }
};

class classic_group {
public:
    classic_group(std::string id, std::int64_t now_ms);

    const std::string& id() const { return id_; }
    classic_state state() const { return state_; }
    classic_state previous_state() const { return previous_state_; }
    bool in(classic_state s) const { return state_ == s; }
    std::int64_t state_timestamp_ms() const { return state_timestamp_ms_; }
    void transition_to(classic_state s, std::int64_t now_ms);

    std::int32_t generation() const { return generation_; }
    const std::optional<std::string>& protocol_type() const { return protocol_type_; }
    const std::optional<std::string>& protocol_name() const { return protocol_name_; }
    const std::optional<std::string>& leader() const { return leader_; }
    std::string leader_or_empty() const { return leader_.value_or(""); }
    bool is_leader(const std::string& member_id) const { return leader_ == member_id; }

    bool has_member(const std::string& id) const { return members_.contains(id); }
    classic_member* member(const std::string& id);
    std::map<std::string, classic_member>& members() { return members_; }
    const std::map<std::string, classic_member>& members() const { return members_; }
    std::size_t size() const { return members_.size(); }
    bool empty() const { return members_.empty(); }

    /// Adds a member (its parked JoinGroup in `join`, may be empty).
    void add(classic_member m, join_callback join);
    /// Removes a member or a pending member; elects another leader when it led.
    void remove(const std::string& member_id);
    /// Replaces protocols, timeouts and the parked JoinGroup of a member.
    void update(classic_member& m, std::vector<api::protocol_metadata> protocols,
                std::int32_t rebalance_timeout_ms, std::int32_t session_timeout_ms,
                join_callback join);
    /// Static member rejoining with a new id: the old id is fenced (its parked calls get
    /// FENCED_INSTANCE_ID) and its state moves to the new id. Returns the member.
    classic_member& replace_static_member(const std::string& instance_id,
                                          const std::string& old_id, const std::string& new_id);

    /// Completes a member's parked JoinGroup; false when none was parked.
    bool complete_join(classic_member& m, api::join_group_result r);
    bool complete_sync(classic_member& m, api::sync_group_result r);

    bool is_pending_member(const std::string& id) const { return pending_join_.contains(id); }
    void add_pending_member(const std::string& id) { pending_join_.insert(id); }
    std::size_t pending_members() const { return pending_join_.size(); }

    void add_pending_sync(const std::string& id) { pending_sync_.insert(id); }
    void remove_pending_sync(const std::string& id) { pending_sync_.erase(id); }
    bool received_sync_from_all() const { return pending_sync_.empty(); }
    const std::set<std::string>& pending_sync() const { return pending_sync_; }
    void clear_pending_sync() { pending_sync_.clear(); }

    std::optional<std::string> static_member_id(const std::string& instance_id) const;
    bool has_static_member(const std::string& instance_id) const {
        return static_members_.contains(instance_id);
    }

    bool all_members_joined() const {
        return members_.size() == num_awaiting_join_ && pending_join_.empty();
    }
    std::size_t num_awaiting_join() const { return num_awaiting_join_; }
    /// The largest rebalance timeout of the members (0 without members).
    std::int32_t rebalance_timeout_ms() const;

    /// compat: ClassicGroup.supportsProtocols: an Empty group takes any non-empty type and
    /// list; otherwise the type must match and one protocol must be offered by every member.
    bool supports_protocols(const std::string& type,
                            const std::vector<api::protocol_metadata>& protocols) const;
    /// The protocol every member offers with the most first-choice votes.
    std::string select_protocol() const;
    /// Keeps the leader when it rejoined, else picks a member that did; false if none did.
    bool maybe_elect_new_joined_leader();
    /// generation + 1; CompletingRebalance with a selected protocol, or Empty.
    void init_next_generation(std::int64_t now_ms);
    /// The members for the leader's JoinGroup response (selected protocol's metadata).
    std::vector<api::join_group_member> join_members() const;

    bool new_member_added() const { return new_member_added_; }
    void set_new_member_added(bool v) { new_member_added_ = v; }
    /// PreparingRebalance can be entered from Stable, CompletingRebalance and Empty.
    bool can_rebalance() const {
        return in(classic_state::stable) || in(classic_state::completing_rebalance) ||
               in(classic_state::empty);
    }

    /// Topics the group consumes (consumer protocol type with a selected protocol whose
    /// metadata parses); nullopt when unknown.
    const std::optional<std::set<std::string>>& subscribed_topics() const {
        return subscribed_topics_;
    }
    /// compat: ClassicGroup.isSubscribedToTopic: unknown subscriptions count as subscribed
    /// only for groups of the consumer protocol type.
    bool is_subscribed_to(const std::string& topic) const;

    /// For persistence and restart.
    stored_group to_stored() const;
    static classic_group from_stored(const std::string& id, const stored_group& g,
                                     std::int64_t now_ms);

private:
    void compute_subscribed_topics();

    std::string id_;
    classic_state state_ = classic_state::empty;
    classic_state previous_state_ = classic_state::empty;
    std::int64_t state_timestamp_ms_ = 0;
    std::int32_t generation_ = 0;
    std::optional<std::string> protocol_type_;
    std::optional<std::string> protocol_name_;
    std::optional<std::string> leader_;
    std::map<std::string, classic_member> members_;
    std::map<std::string, std::string> static_members_;
    std::set<std::string> pending_join_;
    std::set<std::string> pending_sync_;
    std::map<std::string, std::int32_t> supported_protocols_;
    std::size_t num_awaiting_join_ = 0;
    bool new_member_added_ = false;
    std::optional<std::set<std::string>> subscribed_topics_;
};

}  // namespace sluice::backend::group
