// queue_state: choosing messages to receive (plain, FIFO group order, fair queues), and the
// operations on received messages (delete, visibility, dead-letter and move completions).
#include <algorithm>
#include <map>

#include "backend/queue/queue_state.h"

namespace sluice::backend::queue {

namespace {
constexpr std::int64_t max_receive_span_ms = 12 * 3600 * 1000;
}  // namespace

taken_message queue_state::take(entry_map::iterator it, std::int64_t visibility_ms,
                                std::int64_t now, change_list& out) {
    entry& e = it->second;
    taken_message t;
    t.ref = it->first;
    t.body = e.body;
    release_body(e);
    if (config_.redrive && e.receive_count >= config_.redrive->max_receive_count) {
        // compat: SQS moves a message once its receive count exceeds maxReceiveCount, at the
        // receive that would deliver it once more.
        t.dead_letter = true;
        t.receive_count = e.receive_count;
        t.first_receive_ms = e.first_receive_ms;
        set_phase(it, phase::in_flight, now + limits_.dead_letter_hold_ms);
        e.held = true;
        return t;
    }
    ++e.receive_count;
    if (e.first_receive_ms == 0) {
        e.first_receive_ms = now;
    }
    e.last_receive_ms = now;
    set_phase(it, phase::in_flight, now + visibility_ms);
    e.persisted = true;
    out.push_back(record_of(it->first, e));
    t.receive_count = e.receive_count;
    t.first_receive_ms = e.first_receive_ms;
    return t;
}

std::vector<queue_state::entry_map::iterator> queue_state::candidates_plain(std::int32_t max,
                                                                            std::int64_t now,
                                                                            change_list& out) {
    std::vector<entry_map::iterator> picked;
    std::vector<entry_map::iterator> stale;
    // Start at a rotating partition so that every partition gets its turn.
    const message_ref start{next_partition_, min_offset};
    next_partition_ = (next_partition_ + 1) % partitions();
    auto visit = [&](std::set<message_ref>::iterator from, std::set<message_ref>::iterator to) {
        for (auto it = from; it != to && static_cast<std::int32_t>(picked.size()) < max; ++it) {
            auto e = entries_.find(*it);
            (expired(e->second, now) ? stale : picked).push_back(e);
        }
    };
    auto split = available_.lower_bound(start);
    visit(split, available_.end());
    visit(available_.begin(), split);
    for (auto e : stale) {
        finish(e, false, out);
    }
    return picked;
}

std::vector<queue_state::entry_map::iterator> queue_state::candidates_fifo(std::int32_t max,
                                                                           std::int64_t now,
                                                                           change_list& out) {
    std::vector<entry_map::iterator> picked;
    std::vector<entry_map::iterator> stale;
    // Groups in the order of their oldest message; within a group, messages in order for as
    // long as they are available (the rest of the group waits for these).
    for (const auto& [head, g] : ready_groups_) {
        for (const auto& ref : g->members) {
            if (static_cast<std::int32_t>(picked.size()) >= max) {
                break;
            }
            auto e = entries_.find(ref);
            if (e->second.ph != phase::available) {
                break;
            }
            (expired(e->second, now) ? stale : picked).push_back(e);
        }
        if (static_cast<std::int32_t>(picked.size()) >= max) {
            break;
        }
    }
    for (auto e : stale) {
        finish(e, false, out);
    }
    return picked;
}

std::vector<queue_state::entry_map::iterator> queue_state::candidates_fair(std::int32_t max,
                                                                           std::int64_t now,
                                                                           change_list& out) {
    // Fair queues: among the oldest available messages, prefer the groups with the fewest
    // messages in flight, so that one busy group does not hold back the others.
    std::vector<entry_map::iterator> pool;
    std::vector<entry_map::iterator> stale;
    const std::size_t scan = static_cast<std::size_t>(max) * 16 + 64;
    for (auto it = available_.begin(); it != available_.end() && pool.size() < scan; ++it) {
        auto e = entries_.find(*it);
        (expired(e->second, now) ? stale : pool).push_back(e);
    }
    std::map<const group_state*, std::int64_t> load;
    for (auto e : pool) {
        load.emplace(e->second.group, e->second.group ? e->second.group->in_flight : 0);
    }
    std::vector<entry_map::iterator> picked;
    std::vector<bool> used(pool.size(), false);
    while (static_cast<std::int32_t>(picked.size()) < max) {
        std::size_t best = pool.size();
        for (std::size_t i = 0; i < pool.size(); ++i) {
            if (!used[i] &&
                (best == pool.size() || load[pool[i]->second.group] < load[pool[best]->second.group])) {
                best = i;
            }
        }
        if (best == pool.size()) {
            break;
        }
        used[best] = true;
        ++load[pool[best]->second.group];
        picked.push_back(pool[best]);
    }
    for (auto e : stale) {
        finish(e, false, out);
    }
    return picked;
}

std::optional<select_result> queue_state::replay_attempt(const std::string& id, std::int64_t now) {
    auto a = attempts_.find(id);
    if (a == attempts_.end() || a->second.expires_ms <= now) {
        return std::nullopt;
    }
    select_result r;
    for (const auto& [ref, count] : a->second.taken) {
        auto it = entries_.find(ref);
        if (it == entries_.end() || it->second.ph != phase::in_flight || it->second.held ||
            it->second.receive_count != count) {
            attempts_.erase(a);
            return std::nullopt;
        }
        r.messages.push_back({ref, count, it->second.first_receive_ms, nullptr, false});
    }
    return r;
}

select_result queue_state::select(std::int32_t max, std::int64_t visibility_ms, std::int64_t now,
                                  const std::optional<std::string>& attempt_id, change_list& out) {
    advance(now, out);
    if (attempt_id && config_.fifo) {
        if (auto again = replay_attempt(*attempt_id, now)) {
            return std::move(*again);
        }
    }
    select_result r;
    if (static_cast<std::size_t>(in_flight_) >= limits_.max_in_flight) {
        r.over_limit = true;
        return r;
    }
    std::vector<entry_map::iterator> picked;
    if (config_.fifo) {
        picked = candidates_fifo(max, now, out);
    } else if (!groups_.empty()) {
        picked = candidates_fair(max, now, out);
    } else {
        picked = candidates_plain(max, now, out);
    }
    for (auto it : picked) {
        r.messages.push_back(take(it, visibility_ms, now, out));
    }
    if (attempt_id && config_.fifo && !r.messages.empty()) {
        auto& a = attempts_[*attempt_id];
        a.taken.clear();
        for (const auto& m : r.messages) {
            if (!m.dead_letter) {
                a.taken.emplace_back(m.ref, m.receive_count);
            }
        }
        a.expires_ms = now + limits_.attempt_window_ms;
    }
    return r;
}

handle_outcome queue_state::remove(message_ref ref, std::int32_t receive_count, std::int64_t now,
                                   change_list& out) {
    advance(now, out);
    if (ref.partition < 0 || ref.partition >= partitions()) {
        return handle_outcome::done;
    }
    auto it = entries_.find(ref);
    if (it == entries_.end()) {
        // Received before a restart and not read again yet: its replayed record is pending.
        auto& ps = parts_[static_cast<std::size_t>(ref.partition)];
        auto pend = ps.pending.find(ref.offset);
        if (pend != ps.pending.end() && pend->second.phase == stored_phase::received) {
            // A count above the stored one: a receive answered under a lease whose record was
            // lost, the newest receive.
            if (receive_count < pend->second.receive_count) {
                return config_.fifo ? handle_outcome::expired : handle_outcome::stale;
            }
            pend->second.phase = stored_phase::deleted;
            out.push_back({state_change::kind::message, ref, stored_phase::deleted, receive_count,
                           0, pend->second.first_receive_ms});
        }
        return handle_outcome::done;  // deleted already
    }
    entry& e = it->second;
    if (receive_count < e.receive_count) {
        return config_.fifo ? handle_outcome::expired : handle_outcome::stale;
    }
    if (config_.fifo && e.ph != phase::in_flight) {
        return handle_outcome::expired;
    }
    finish(it, true, out);
    return handle_outcome::done;
}

handle_outcome queue_state::change_visibility(message_ref ref, std::int32_t receive_count,
                                              std::int64_t timeout_ms, std::int64_t now,
                                              change_list& out) {
    advance(now, out);
    if (ref.partition < 0 || ref.partition >= partitions()) {
        return handle_outcome::gone;
    }
    auto it = entries_.find(ref);
    if (it == entries_.end()) {
        auto& ps = parts_[static_cast<std::size_t>(ref.partition)];
        auto pend = ps.pending.find(ref.offset);
        if (pend == ps.pending.end() || pend->second.phase != stored_phase::received) {
            return handle_outcome::gone;
        }
        if (receive_count < pend->second.receive_count) {
            return handle_outcome::stale;
        }
        pend->second.receive_count = receive_count;  // a lease's lost receive: adopted
        pend->second.visible_at_ms = now + timeout_ms;
        out.push_back({state_change::kind::message, ref, stored_phase::received, receive_count,
                       now + timeout_ms, pend->second.first_receive_ms});
        return handle_outcome::done;
    }
    entry& e = it->second;
    if (receive_count < e.receive_count) {
        return handle_outcome::stale;
    }
    if (receive_count > e.receive_count && e.ph == phase::in_flight) {
        // The receive of a lease whose record was lost (the message is held for it): adopted.
        e.receive_count = receive_count;
        e.held = false;
        e.persisted = true;
        e.last_receive_ms = now;
        if (e.first_receive_ms == 0) {
            e.first_receive_ms = now;
        }
    } else if (receive_count > e.receive_count) {
        return handle_outcome::stale;
    }
    if (e.ph != phase::in_flight || e.held) {
        return handle_outcome::not_inflight;
    }
    if (timeout_ms > 0 && now + timeout_ms > e.last_receive_ms + max_receive_span_ms) {
        return handle_outcome::too_long;
    }
    set_phase(it, timeout_ms == 0 ? phase::available : phase::in_flight, now + timeout_ms);
    out.push_back(record_of(it->first, it->second));
    return handle_outcome::done;
}

void queue_state::dead_lettered(message_ref ref, change_list& out) {
    auto it = entries_.find(ref);
    if (it != entries_.end()) {
        finish(it, true, out);
    }
}

void queue_state::drop(message_ref ref, change_list& out) { dead_lettered(ref, out); }

bool queue_state::in_flight_for(message_ref ref, std::int32_t receive_count,
                                std::int64_t visibility_ms, std::int64_t now) const {
    auto it = entries_.find(ref);
    if (it == entries_.end() || it->second.held || it->second.receive_count != receive_count) {
        return false;
    }
    return visibility_ms == 0 || (it->second.ph == phase::in_flight && it->second.due > now);
}

bool queue_state::give_back(message_ref ref, std::int32_t receive_count, std::int64_t now,
                            change_list& out) {
    auto it = entries_.find(ref);
    if (it == entries_.end()) {
        return false;
    }
    entry& e = it->second;
    if (e.ph != phase::in_flight || e.held || e.receive_count != receive_count) {
        return false;
    }
    --e.receive_count;
    if (e.receive_count == 0) {
        e.first_receive_ms = 0;
    }
    set_phase(it, phase::available, now);
    out.push_back(record_of(it->first, e));
    return true;
}

std::vector<taken_message> queue_state::take_for_move(std::int32_t max,
                                                      const std::vector<std::int64_t>& ends,
                                                      std::int64_t hold_ms, std::int64_t now) {
    std::vector<taken_message> out;
    std::vector<entry_map::iterator> picked;
    for (auto it = available_.begin();
         it != available_.end() && static_cast<std::int32_t>(picked.size()) < max; ++it) {
        if (static_cast<std::size_t>(it->partition) < ends.size() &&
            it->offset < ends[static_cast<std::size_t>(it->partition)]) {
            picked.push_back(entries_.find(*it));
        }
    }
    for (auto it : picked) {
        taken_message t;
        t.ref = it->first;
        t.body = it->second.body;
        t.receive_count = it->second.receive_count;
        t.first_receive_ms = it->second.first_receive_ms;
        release_body(it->second);
        set_phase(it, phase::in_flight, now + hold_ms);
        it->second.held = true;
        out.push_back(std::move(t));
    }
    return out;
}

}  // namespace sluice::backend::queue
