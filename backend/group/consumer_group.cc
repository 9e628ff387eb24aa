#include "backend/group/consumer_group.h"

namespace sluice::backend::group {
namespace {

bool owns_any(const std::optional<std::vector<api::owned_partitions>>& owned,
              const topic_partitions& revoking) {
    if (!owned) {
        return true;  // compat: CurrentAssignmentBuilder.ownsRevokedPartitions: unknown = owns
    }
    for (const auto& tp : *owned) {
        auto it = revoking.find(tp.topic_id);
        if (it == revoking.end()) {
            continue;
        }
        for (partition_id p : tp.partitions) {
            if (it->second.contains(p.value)) {
                return true;
            }
        }
    }
    return false;
}

}  // namespace

consumer_member* consumer_group::member(const std::string& id) {
    auto it = members_.find(id);
    return it == members_.end() ? nullptr : &it->second;
}

std::optional<std::string> consumer_group::static_member_id(const std::string& instance_id) const {
    auto it = static_members_.find(instance_id);
    return it == static_members_.end() ? std::nullopt : std::optional(it->second);
}

void consumer_group::release(const consumer_member& m) {
    for (const auto* set : {&m.assigned, &m.pending_revocation}) {
        for (const auto& [topic, parts] : *set) {
            for (std::int32_t p : parts) {
                auto it = partition_epochs_.find({topic, p});
                if (it != partition_epochs_.end() && it->second == m.member_epoch) {
                    partition_epochs_.erase(it);
                }
            }
        }
    }
}

void consumer_group::claim(const consumer_member& m) {
    for (const auto* set : {&m.assigned, &m.pending_revocation}) {
        for (const auto& [topic, parts] : *set) {
            for (std::int32_t p : parts) {
                partition_epochs_[{topic, p}] = m.member_epoch;
            }
        }
    }
}

void consumer_group::upsert(consumer_member m) {
    auto it = members_.find(m.member_id);
    if (it != members_.end()) {
        release(it->second);
        if (it->second.instance_id && it->second.instance_id != m.instance_id) {
            static_members_.erase(*it->second.instance_id);
        }
    }
    if (m.instance_id) {
        static_members_[*m.instance_id] = m.member_id;
    }
    claim(m);
    std::string id = m.member_id;
    members_.insert_or_assign(id, std::move(m));
}

void consumer_group::remove(const std::string& member_id) {
    auto it = members_.find(member_id);
    if (it == members_.end()) {
        return;
    }
    release(it->second);
    if (it->second.instance_id) {
        auto s = static_members_.find(*it->second.instance_id);
        if (s != static_members_.end() && s->second == member_id) {
            static_members_.erase(s);
        }
    }
    members_.erase(it);
    target_.erase(member_id);
}

const topic_partitions& consumer_group::target_of(const std::string& member_id) const {
    static const topic_partitions none;
    auto it = target_.find(member_id);
    return it == target_.end() ? none : it->second;
}

void consumer_group::set_target_assignment(std::int32_t epoch,
                                           std::map<std::string, topic_partitions> t) {
    target_ = std::move(t);
    assignment_epoch_ = epoch;
}

void consumer_group::move_target(const std::string& from, const std::string& to) {
    auto it = target_.find(from);
    if (it == target_.end()) {
        return;
    }
    auto tp = std::move(it->second);
    target_.erase(it);
    target_[to] = std::move(tp);
}

std::int32_t consumer_group::partition_epoch(const uuid& topic, std::int32_t p) const {
    auto it = partition_epochs_.find({topic, p});
    return it == partition_epochs_.end() ? -1 : it->second;
}

std::string consumer_group::state() const {
    if (members_.empty()) {
        return "Empty";
    }
    if (group_epoch_ > assignment_epoch_) {
        return "Assigning";
    }
    for (const auto& [_, m] : members_) {
        if (m.member_epoch != assignment_epoch_ || m.state != member_state::stable) {
            return "Reconciling";
        }
    }
    return "Stable";
}

std::string consumer_group::preferred_assignor(const std::string& fallback) const {
    std::map<std::string, int> votes;
    for (const auto& [_, m] : members_) {
        if (m.server_assignor) {
            ++votes[*m.server_assignor];
        }
    }
    std::string best = fallback;
    int best_votes = 0;
    for (const auto& [name, n] : votes) {
        if (n > best_votes) {
            best = name;
            best_votes = n;
        }
    }
    return best;
}

void consumer_group::reconcile(consumer_member& m,
                               const std::optional<std::vector<api::owned_partitions>>& owned) {
    switch (m.state) {
        case member_state::stable:
            if (m.member_epoch != assignment_epoch_) {
                compute_next(m, m.member_epoch, owned);
            }
            return;
        case member_state::unrevoked_partitions:
            if (owns_any(owned, m.pending_revocation)) {
                return;
            }
            // The member gave up what it had to: move on (Kafka 3.9 bumps the epoch by one
            // here; staying at the same epoch is equivalent, since the next step moves the
            // member to the target epoch unless it must revoke again).
            compute_next(m, m.member_epoch, owned);
            return;
        case member_state::unreleased_partitions:
            compute_next(m, m.member_epoch, owned);
            return;
    }
}

void consumer_group::compute_next(consumer_member& m, std::int32_t epoch,
                                  const std::optional<std::vector<api::owned_partitions>>& owned) {
    const topic_partitions& target = target_of(m.member_id);
    topic_partitions assigned;
    topic_partitions revoking;
    topic_partitions adding;
    bool unreleased = false;

    std::set<uuid> topics;
    for (const auto& [t, _] : target) {
        topics.insert(t);
    }
    for (const auto& [t, _] : m.assigned) {
        topics.insert(t);
    }
    for (const auto& topic : topics) {
        static const std::set<std::int32_t> none;
        auto ti = target.find(topic);
        const auto& want = ti == target.end() ? none : ti->second;
        auto ci = m.assigned.find(topic);
        const auto& have = ci == m.assigned.end() ? none : ci->second;
        for (std::int32_t p : have) {
            (want.contains(p) ? assigned : revoking)[topic].insert(p);
        }
        for (std::int32_t p : want) {
            if (have.contains(p)) {
                continue;
            }
            const std::int32_t owner = partition_epoch(topic, p);
            if (owner != -1) {
                unreleased = true;
            } else {
                adding[topic].insert(p);
            }
        }
    }

    release(m);
    m.previous_member_epoch = m.member_epoch;
    if (!revoking.empty() && owns_any(owned, revoking)) {
        // Keep the epoch and ask the member to give the partitions up first.
        m.state = member_state::unrevoked_partitions;
        m.member_epoch = epoch;
        m.assigned = std::move(assigned);
        m.pending_revocation = std::move(revoking);
    } else {
        for (auto& [topic, parts] : adding) {
            assigned[topic].insert(parts.begin(), parts.end());
        }
        m.state = unreleased ? member_state::unreleased_partitions : member_state::stable;
        m.member_epoch = assignment_epoch_;
        m.assigned = std::move(assigned);
        m.pending_revocation.clear();
    }
    claim(m);
}

}  // namespace sluice::backend::group
