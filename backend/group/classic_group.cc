#include "backend/group/classic_group.h"

#include <algorithm>

#include "backend/group/consumer_protocol.h"
#include "backend/group/errc.h"

namespace sluice::backend::group {

const char* to_string(classic_state s) {
    switch (s) {
        case classic_state::empty: return "Empty";
        case classic_state::preparing_rebalance: return "PreparingRebalance";
        case classic_state::completing_rebalance: return "CompletingRebalance";
        case classic_state::stable: return "Stable";
        case classic_state::dead: return "Dead";
    }
    return "Dead";
}

const std::vector<std::byte>& classic_member::metadata(const std::string& protocol) const {
    static const std::vector<std::byte> none;
    for (const auto& p : protocols) {
        if (p.name == protocol) {
            return p.metadata;
        }
    }
    return none;
}

classic_group::classic_group(std::string id, std::int64_t now_ms)
    : id_(std::move(id)), state_timestamp_ms_(now_ms) {}

void classic_group::transition_to(classic_state s, std::int64_t now_ms) {
    previous_state_ = state_;
    state_ = s;
    state_timestamp_ms_ = now_ms;
}

classic_member* classic_group::member(const std::string& id) {
    auto it = members_.find(id);
    return it == members_.end() ? nullptr : &it->second;
}

void classic_group::add(classic_member m, join_callback join) {
    if (m.group_instance_id) {
        static_members_[*m.group_instance_id] = m.member_id;
    }
    if (members_.empty()) {
        protocol_type_ = m.protocol_type;
    }
    if (!leader_) {
        leader_ = m.member_id;
    }
    for (const auto& p : m.protocols) {
        ++supported_protocols_[p.name];
    }
    m.awaiting_join = std::move(join);
    if (m.awaiting_join) {
        ++num_awaiting_join_;
    }
    pending_join_.erase(m.member_id);
    std::string id = m.member_id;
    members_.insert_or_assign(id, std::move(m));
}

void classic_group::remove(const std::string& member_id) {
    auto it = members_.find(member_id);
    if (it != members_.end()) {
        for (const auto& p : it->second.protocols) {
            --supported_protocols_[p.name];
        }
        if (it->second.awaiting_join_response()) {
            --num_awaiting_join_;
        }
        if (it->second.group_instance_id) {
            static_members_.erase(*it->second.group_instance_id);
        }
        members_.erase(it);
    }
    if (is_leader(member_id)) {
        leader_ = members_.empty() ? std::nullopt : std::optional(members_.begin()->first);
    }
    pending_join_.erase(member_id);
    pending_sync_.erase(member_id);
}

void classic_group::update(classic_member& m, std::vector<api::protocol_metadata> protocols,
                           std::int32_t rebalance_timeout_ms, std::int32_t session_timeout_ms,
                           join_callback join) {
    for (const auto& p : m.protocols) {
        --supported_protocols_[p.name];
    }
    m.protocols = std::move(protocols);
    for (const auto& p : m.protocols) {
        ++supported_protocols_[p.name];
    }
    m.rebalance_timeout_ms = rebalance_timeout_ms;
    m.session_timeout_ms = session_timeout_ms;
    if (join && m.awaiting_join_response()) {
        // The member sent another JoinGroup while one was parked: the older call must not
        // wait forever (the member rejoins when it gets this answer).
        api::join_group_result stale;
        stale.error = make_error_code(errc::rebalance_in_progress);
        stale.member_id = m.member_id;
        auto old = std::move(m.awaiting_join);
        m.awaiting_join = nullptr;
        --num_awaiting_join_;
        old(std::move(stale));
    }
    if (join && !m.awaiting_join_response()) {
        ++num_awaiting_join_;
    } else if (!join && m.awaiting_join_response()) {
        --num_awaiting_join_;
    }
    m.awaiting_join = std::move(join);
}

classic_member& classic_group::replace_static_member(const std::string& instance_id,
                                                     const std::string& old_id,
                                                     const std::string& new_id) {
    auto node = members_.extract(old_id);
    classic_member& old = node.mapped();
    // Fence whoever still waits under the old id.
    if (old.awaiting_join_response()) {
        api::join_group_result r;
        r.error = make_error_code(errc::fenced_instance_id);
        r.member_id = old_id;
        auto cb = std::move(old.awaiting_join);
        old.awaiting_join = nullptr;
        --num_awaiting_join_;
        cb(std::move(r));
    }
    if (old.awaiting_sync_response()) {
        api::sync_group_result r;
        r.error = make_error_code(errc::fenced_instance_id);
        auto cb = std::move(old.awaiting_sync);
        old.awaiting_sync = nullptr;
        cb(std::move(r));
    }
    node.key() = new_id;
    node.mapped().member_id = new_id;
    node.mapped().is_new = false;
    auto it = members_.insert(std::move(node)).position;
    if (is_leader(old_id)) {
        leader_ = new_id;
    }
    pending_sync_.erase(old_id);
    static_members_[instance_id] = new_id;
    return it->second;
}

bool classic_group::complete_join(classic_member& m, api::join_group_result r) {
    if (!m.awaiting_join_response()) {
        return false;
    }
    auto cb = std::move(m.awaiting_join);
    m.awaiting_join = nullptr;
    --num_awaiting_join_;
    cb(std::move(r));
    return true;
}

bool classic_group::complete_sync(classic_member& m, api::sync_group_result r) {
    if (!m.awaiting_sync_response()) {
        return false;
    }
    auto cb = std::move(m.awaiting_sync);
    m.awaiting_sync = nullptr;
    cb(std::move(r));
    return true;
}

std::optional<std::string> classic_group::static_member_id(const std::string& instance_id) const {
    auto it = static_members_.find(instance_id);
    return it == static_members_.end() ? std::nullopt : std::optional(it->second);
}

std::int32_t classic_group::rebalance_timeout_ms() const {
    std::int32_t t = 0;
    for (const auto& [_, m] : members_) {
        t = std::max(t, m.rebalance_timeout_ms);
    }
    return t;
}

bool classic_group::supports_protocols(const std::string& type,
                                       const std::vector<api::protocol_metadata>& protocols) const {
    if (in(classic_state::empty)) {
        return !type.empty() && !protocols.empty();
    }
    if (protocol_type_ != type) {
        return false;
    }
    for (const auto& p : protocols) {
        auto it = supported_protocols_.find(p.name);
        if (it != supported_protocols_.end() &&
            it->second == static_cast<std::int32_t>(members_.size())) {
            return true;
        }
    }
    return false;
}

std::string classic_group::select_protocol() const {
    std::set<std::string> candidates;
    for (const auto& [name, count] : supported_protocols_) {
        if (count == static_cast<std::int32_t>(members_.size())) {
            candidates.insert(name);
        }
    }
    std::map<std::string, int> votes;
    for (const auto& [_, m] : members_) {
        for (const auto& p : m.protocols) {
            if (candidates.contains(p.name)) {
                ++votes[p.name];
                break;
            }
        }
    }
    std::string best;
    int best_votes = -1;
    for (const auto& [name, n] : votes) {
        if (n > best_votes) {
            best = name;
            best_votes = n;
        }
    }
    return best;
}

bool classic_group::maybe_elect_new_joined_leader() {
    if (!leader_) {
        return false;
    }
    auto* current = member(*leader_);
    if (current != nullptr && current->awaiting_join_response()) {
        return true;
    }
    for (const auto& [id, m] : members_) {
        if (m.awaiting_join_response()) {
            leader_ = id;
            return true;
        }
    }
    return false;
}

void classic_group::init_next_generation(std::int64_t now_ms) {
    ++generation_;
    if (!members_.empty()) {
        protocol_name_ = select_protocol();
        compute_subscribed_topics();
        transition_to(classic_state::completing_rebalance, now_ms);
    } else {
        protocol_name_.reset();
        compute_subscribed_topics();
        transition_to(classic_state::empty, now_ms);
    }
    pending_sync_.clear();
}

std::vector<api::join_group_member> classic_group::join_members() const {
    std::vector<api::join_group_member> out;
    out.reserve(members_.size());
    for (const auto& [id, m] : members_) {
        out.push_back({id, m.group_instance_id, m.metadata(protocol_name_.value_or(""))});
    }
    return out;
}

void classic_group::compute_subscribed_topics() {
    subscribed_topics_.reset();
    if (!protocol_type_ || *protocol_type_ != consumer_protocol_type) {
        return;
    }
    if (members_.empty()) {
        subscribed_topics_.emplace();
        return;
    }
    if (!protocol_name_) {
        return;
    }
    std::set<std::string> all;
    for (const auto& [_, m] : members_) {
        const auto& meta = m.metadata(*protocol_name_);
        auto topics = parse_subscription_topics(protocol::bytes_view(meta.data(), meta.size()));
        if (!topics) {
            return;
        }
        all.insert(topics->begin(), topics->end());
    }
    subscribed_topics_ = std::move(all);
}

bool classic_group::is_subscribed_to(const std::string& topic) const {
    if (subscribed_topics_) {
        return subscribed_topics_->contains(topic);
    }
    return protocol_type_ && *protocol_type_ == consumer_protocol_type;
}

stored_group classic_group::to_stored() const {
    stored_group g;
    g.state_timestamp_ms = state_timestamp_ms_;
    g.protocol_type = protocol_type_.value_or("");
    g.generation_id = generation_;
    g.protocol_name = protocol_name_;
    g.leader = leader_;
    for (const auto& [id, m] : members_) {
        stored_member s;
        s.member_id = id;
        s.group_instance_id = m.group_instance_id;
        s.client_id = m.client_id;
        s.client_host = m.client_host;
        s.rebalance_timeout_ms = m.rebalance_timeout_ms;
        s.session_timeout_ms = m.session_timeout_ms;
        s.subscription = m.metadata(protocol_name_.value_or(""));
        s.assignment = m.assignment;
        g.members.push_back(std::move(s));
    }
    return g;
}

classic_group classic_group::from_stored(const std::string& id, const stored_group& g,
                                         std::int64_t now_ms) {
    classic_group out(id, now_ms);
    out.generation_ = g.generation_id;
    out.protocol_type_ = g.protocol_type.empty() ? std::nullopt : std::optional(g.protocol_type);
    out.protocol_name_ = g.protocol_name;
    // Versions 0 and 1 of the record have no timestamp (-1): the group's state starts now.
    out.state_timestamp_ms_ = g.state_timestamp_ms >= 0 ? g.state_timestamp_ms : now_ms;
    for (const auto& s : g.members) {
        classic_member m;
        m.member_id = s.member_id;
        m.group_instance_id = s.group_instance_id;
        m.client_id = s.client_id;
        m.client_host = s.client_host;
        m.session_timeout_ms = s.session_timeout_ms;
        m.protocol_type = g.protocol_type;  // compat: Kafka keeps one protocol type per group
        m.rebalance_timeout_ms =
            s.rebalance_timeout_ms >= 0 ? s.rebalance_timeout_ms : s.session_timeout_ms;
        m.protocols.push_back({g.protocol_name.value_or(""), s.subscription});
        m.assignment = s.assignment;
        out.add(std::move(m), nullptr);
    }
    out.protocol_type_ = g.protocol_type.empty() ? std::nullopt : std::optional(g.protocol_type);
    out.leader_ = g.leader;
    if (out.leader_ && !out.has_member(*out.leader_)) {
        out.leader_ = out.members_.empty() ? std::nullopt
                                           : std::optional(out.members_.begin()->first);
    }
    // compat: GroupMetadataManager.replay: a loaded group with members is Stable, else Empty.
    out.state_ = out.members_.empty() ? classic_state::empty : classic_state::stable;
    out.previous_state_ = out.state_;
    out.compute_subscribed_topics();
    return out;
}

}  // namespace sluice::backend::group
