#include "backend/group/group_registry.h"

#include "backend/group/ticker.h"

namespace sluice::backend::group {

void locked_group::release() {
    if (!entry_) {
        return;
    }
    std::shared_ptr<group_entry> e = std::move(entry_);
    registry_->released(*e);
    std::vector<std::function<void()>> answers;
    answers.swap(e->answers);
    e->mu.unlock();
    for (auto& answer : answers) {
        answer();
    }
}

locked_group group_registry::find(const std::string& group_id) {
    return lookup(group_id, false);
}

locked_group group_registry::find_or_create(const std::string& group_id) {
    return lookup(group_id, true);
}

locked_group group_registry::lookup(const std::string& group_id, bool create) {
    for (;;) {
        std::shared_ptr<group_entry> e;
        {
            std::lock_guard lock(mu_);
            if (auto it = groups_.find(group_id); it != groups_.end()) {
                e = it->second;
            }
        }
        if (e) {
            e->mu.lock();
            if (!e->removed) {
                return locked_group(this, std::move(e));
            }
            // Erased while we waited for it: whatever replaced it is in the map now.
            e->mu.unlock();
            continue;
        }
        if (!create) {
            return {};
        }
        // Published locked, so that nobody sees it before its creator filled it; its lock is
        // taken first, as everywhere (a group's, then the registry's).
        e = std::make_shared<group_entry>(group_id);
        e->mu.lock();
        bool inserted = false;
        {
            std::lock_guard lock(mu_);
            inserted = groups_.try_emplace(group_id, e).second;
        }
        if (inserted) {
            return locked_group(this, std::move(e));
        }
        e->mu.unlock();  // another call created it meanwhile: use that one
    }
}

std::vector<std::string> group_registry::ids() const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    out.reserve(groups_.size());
    for (const auto& [id, _] : groups_) {
        out.push_back(id);
    }
    return out;
}

std::size_t group_registry::size() const {
    std::lock_guard lock(mu_);
    return groups_.size();
}

void group_registry::install(std::map<std::string, std::shared_ptr<group_entry>> groups) {
    for (auto& [id, e] : groups) {
        e->noted_deadline = e->timers.next_deadline();
        ticker_.set_group(id, e->noted_deadline);
    }
    std::lock_guard lock(mu_);
    groups_ = std::move(groups);
}

void group_registry::released(group_entry& e) {
    if (!e.removed && e.vacant()) {
        erase(e);
    }
    if (e.removed) {
        return;
    }
    // The ticker needs, per group, a deadline no later than the group's next timeout: an
    // earlier one only costs a visit that finds nothing due (and then tells it the real one).
    // So a deadline that moves later, as a session timeout does at every heartbeat, is not
    // told: only a new or an earlier one.
    auto next = e.timers.next_deadline();
    if (next && (!e.noted_deadline || *next < *e.noted_deadline)) {
        e.noted_deadline = next;
        ticker_.set_group(e.id, next);
    }
}

void group_registry::erase(group_entry& e) {
    e.removed = true;
    e.timers.clear();
    // The ticker first: an entry that replaces this one can only appear once the map no longer
    // holds this one, so its deadline is never overwritten by ours.
    ticker_.set_group(e.id, std::nullopt);
    std::lock_guard lock(mu_);
    auto it = groups_.find(e.id);
    if (it != groups_.end() && it->second.get() == &e) {
        groups_.erase(it);
    }
}

}  // namespace sluice::backend::group
