// queue_state: the window of messages, its indexes, cursors, and what changes persist.
// Selection and the receipt-handle operations are in queue_select.cc.
#include "backend/queue/queue_state.h"

#include <algorithm>

namespace sluice::backend::queue {

queue_state::queue_state(std::int32_t partitions, queue_config config, queue_limits limits)
    : config_(std::move(config)),
      limits_(limits),
      parts_(static_cast<std::size_t>(std::max(partitions, 1))) {}

void queue_state::set_partitions(std::int32_t n) {
    if (n > partitions()) {
        parts_.resize(static_cast<std::size_t>(n));
    }
}

// --- replayed state ---------------------------------------------------------------------------

void queue_state::restore_cursor(std::int32_t partition, std::int64_t cursor) {
    set_partitions(partition + 1);
    auto& ps = parts_[static_cast<std::size_t>(partition)];
    ps.fetch = cursor;
    ps.persisted_cursor = cursor;
}

void queue_state::start_at(std::int32_t partition, std::int64_t offset) {
    set_partitions(partition + 1);
    parts_[static_cast<std::size_t>(partition)].fetch = offset;
}

void queue_state::restore_message(const message_record& r) {
    set_partitions(r.partition + 1);
    parts_[static_cast<std::size_t>(r.partition)].pending[r.offset] = r;
}

void queue_state::restore_lease(const lease_record& r) {
    set_partitions(r.partition + 1);
    auto& ps = parts_[static_cast<std::size_t>(r.partition)];
    ps.lease_below = r.below;
    ps.lease_until = r.until_ms;
    ps.written_below = r.below;
    ps.written_until = r.until_ms;
    ps.lease_persisted = true;
    ps.hold_below = r.below;
    ps.hold_until = r.until_ms;
}

void queue_state::clamp(std::int32_t partition, std::int64_t log_start, std::int64_t log_end,
                        change_list& out) {
    set_partitions(partition + 1);
    auto& ps = parts_[static_cast<std::size_t>(partition)];
    std::int64_t c = std::clamp(ps.fetch, log_start, std::max(log_start, log_end));
    ps.fetch = c;
    ps.log_end = std::max(log_end, c);
    for (auto it = ps.pending.begin(); it != ps.pending.end();) {
        if (it->first < c || it->first >= log_end) {
            out.push_back({state_change::kind::tombstone, {partition, it->first}});
            it = ps.pending.erase(it);
        } else {
            ++it;
        }
    }
    if (ps.persisted_cursor != c) {
        out.push_back({state_change::kind::cursor, {partition, c}});
        ps.persisted_cursor = c;
    }
}

// --- reading the topic ------------------------------------------------------------------------

std::int64_t queue_state::fetch_position(std::int32_t partition) const {
    if (partition < 0 || partition >= partitions()) {
        return 0;
    }
    return parts_[static_cast<std::size_t>(partition)].fetch;
}

std::int64_t queue_state::append_floor(std::int32_t partition) const {
    if (partition < 0 || partition >= partitions()) {
        return 0;
    }
    const auto& ps = parts_[static_cast<std::size_t>(partition)];
    return std::max(ps.fetch, ps.log_end);
}

bool queue_state::wants_more() const {
    const auto window = entries_.size() - static_cast<std::size_t>(in_flight_);
    return held_bytes_ < limits_.read_ahead_bytes && window < limits_.read_ahead_messages;
}

void queue_state::drop_pending_below(std::int32_t partition, std::int64_t next) {
    auto& ps = parts_[static_cast<std::size_t>(partition)];
    // A replayed record of an offset the topic holds no message at (a control record, an
    // aborted one): it names nothing, and goes once the cursor passes it.
    while (!ps.pending.empty() && ps.pending.begin()->first < next) {
        ps.done_records.insert(ps.pending.begin()->first);
        ps.pending.erase(ps.pending.begin());
    }
}

bool queue_state::add(message_ref ref, std::shared_ptr<const stored_message> m, std::int64_t now) {
    set_partitions(ref.partition + 1);
    auto& ps = parts_[static_cast<std::size_t>(ref.partition)];
    if (ref.offset < ps.fetch) {
        return false;
    }
    drop_pending_below(ref.partition, ref.offset);
    ps.fetch = ref.offset + 1;
    ps.log_end = std::max(ps.log_end, ps.fetch);

    entry e;
    e.sent_ms = m->sent_ms;
    phase ph = phase::available;
    std::int64_t due = 0;
    if (auto pend = ps.pending.find(ref.offset); pend != ps.pending.end()) {
        const message_record rec = pend->second;
        ps.pending.erase(pend);
        if (rec.phase == stored_phase::deleted) {
            ps.done_records.insert(ref.offset);
            return false;
        }
        e.receive_count = rec.receive_count;
        e.first_receive_ms = rec.first_receive_ms;
        e.last_receive_ms = now;
        e.persisted = true;
        if (rec.visible_at_ms > now) {
            ph = phase::in_flight;
            due = rec.visible_at_ms;
        }
    } else if (m->visible_from_ms > now) {
        ph = phase::delayed;
        due = m->visible_from_ms;
    }
    bool held = false;
    if (ref.offset < ps.hold_below && now < ps.hold_until && due < ps.hold_until) {
        // A receive answered before its record was stored may hold it until the lease ends.
        held = ph != phase::in_flight;
        ph = phase::in_flight;
        due = ps.hold_until;
    }
    if (expired(e, now)) {
        if (e.persisted) {
            ps.done_records.insert(ref.offset);
        }
        return false;
    }
    e.group = group_of(m);
    e.ph = ph;
    e.due = due;
    e.held = held;
    if (ph != phase::in_flight) {
        e.bytes = m->memory_bytes();
        held_bytes_ += e.bytes;
        e.body = std::move(m);
    }
    auto it = entries_.emplace(ref, std::move(e)).first;
    index(it);
    if (auto* g = it->second.group) {
        g->members.insert(ref);
        refresh_group(g);
    }
    return ph == phase::available;
}

void queue_state::skip_to(std::int32_t partition, std::int64_t next) {
    set_partitions(partition + 1);
    auto& ps = parts_[static_cast<std::size_t>(partition)];
    if (next > ps.fetch) {
        drop_pending_below(partition, next);
        ps.fetch = next;
        ps.log_end = std::max(ps.log_end, next);
    }
}

void queue_state::truncate_below(std::int32_t partition, std::int64_t log_start, change_list& out) {
    set_partitions(partition + 1);
    auto it = entries_.lower_bound({partition, min_offset});
    while (it != entries_.end() && it->first.partition == partition &&
           it->first.offset < log_start) {
        auto next = std::next(it);
        finish(it, false, out);
        it = next;
    }
    skip_to(partition, log_start);
    advance_cursor(partition, out);
}

void queue_state::set_log_end(std::int32_t partition, std::int64_t end) {
    set_partitions(partition + 1);
    auto& ps = parts_[static_cast<std::size_t>(partition)];
    ps.log_end = std::max(end, ps.fetch);
}

// --- indexes ----------------------------------------------------------------------------------

void queue_state::index(entry_map::iterator it) {
    entry& e = it->second;
    switch (e.ph) {
        case phase::available:
            available_.insert(it->first);
            break;
        case phase::delayed:
            timed_.insert({e.due, it->first});
            ++delayed_;
            break;
        case phase::in_flight:
            timed_.insert({e.due, it->first});
            ++in_flight_;
            if (e.group != nullptr) {
                ++e.group->in_flight;
            }
            break;
    }
}

void queue_state::unindex(entry_map::iterator it) {
    entry& e = it->second;
    switch (e.ph) {
        case phase::available:
            available_.erase(it->first);
            break;
        case phase::delayed:
            timed_.erase({e.due, it->first});
            --delayed_;
            break;
        case phase::in_flight:
            timed_.erase({e.due, it->first});
            --in_flight_;
            if (e.group != nullptr) {
                --e.group->in_flight;
            }
            break;
    }
}

void queue_state::set_phase(entry_map::iterator it, phase p, std::int64_t due) {
    unindex(it);
    it->second.ph = p;
    it->second.due = p == phase::available ? 0 : due;
    if (p != phase::in_flight) {
        it->second.held = false;
    }
    index(it);
    refresh_group(it->second.group);
}

void queue_state::release_body(entry& e) {
    if (e.body) {
        held_bytes_ -= e.bytes;
        e.bytes = 0;
        e.body.reset();
    }
}

queue_state::group_state* queue_state::group_of(const std::shared_ptr<const stored_message>& m) {
    if (!m->group_id && !config_.fifo) {
        return nullptr;
    }
    // FIFO: a record without a key (a Kafka producer's) belongs to the group "".
    const std::string& id = m->group_id ? *m->group_id : std::string();
    auto& slot = groups_[id];
    if (!slot) {
        slot = std::make_unique<group_state>();
        slot->id = id;
    }
    return slot.get();
}

void queue_state::refresh_group(group_state* g) {
    if (g == nullptr) {
        return;
    }
    bool ready = false;
    message_ref head;
    if (config_.fifo && g->in_flight == 0 && !g->members.empty()) {
        head = *g->members.begin();
        auto it = entries_.find(head);
        ready = it != entries_.end() && it->second.ph == phase::available;
    }
    if (g->ready_as && (!ready || *g->ready_as != head)) {
        ready_groups_.erase({*g->ready_as, g});
        g->ready_as.reset();
    }
    if (ready && !g->ready_as) {
        ready_groups_.insert({head, g});
        g->ready_as = head;
    }
    if (g->members.empty() && g->in_flight == 0 && !g->ready_as) {
        groups_.erase(g->id);  // g is gone after this
    }
}

// --- finishing and the cursor -----------------------------------------------------------------

std::int64_t queue_state::cursor(std::int32_t partition) const {
    auto it = entries_.lower_bound({partition, min_offset});
    if (it != entries_.end() && it->first.partition == partition) {
        return it->first.offset;
    }
    return parts_[static_cast<std::size_t>(partition)].fetch;
}

void queue_state::finish(entry_map::iterator it, bool persist, change_list& out) {
    const message_ref ref = it->first;
    unindex(it);
    release_body(it->second);
    group_state* g = it->second.group;
    const bool had_record = it->second.persisted;
    const std::int32_t count = it->second.receive_count;
    const std::int64_t first = it->second.first_receive_ms;
    entries_.erase(it);
    if (g != nullptr) {
        g->members.erase(ref);
        refresh_group(g);
    }
    auto& ps = parts_[static_cast<std::size_t>(ref.partition)];
    if (ref.offset < cursor(ref.partition)) {
        // The cursor passes it: its own record (if any) goes with the cursor record.
        if (had_record) {
            out.push_back({state_change::kind::tombstone, ref});
        }
    } else if (persist) {
        out.push_back({state_change::kind::message, ref, stored_phase::deleted, count, 0, first});
        ps.done_records.insert(ref.offset);
    } else if (had_record) {
        ps.done_records.insert(ref.offset);
    }
    advance_cursor(ref.partition, out);
}

void queue_state::advance_cursor(std::int32_t partition, change_list& out) {
    auto& ps = parts_[static_cast<std::size_t>(partition)];
    const std::int64_t c = cursor(partition);
    if (c <= ps.persisted_cursor) {
        return;
    }
    while (!ps.done_records.empty() && *ps.done_records.begin() < c) {
        out.push_back({state_change::kind::tombstone, {partition, *ps.done_records.begin()}});
        ps.done_records.erase(ps.done_records.begin());
    }
    out.push_back({state_change::kind::cursor, {partition, c}});
    ps.persisted_cursor = c;
}

bool queue_state::expired(const entry& e, std::int64_t now) const {
    return e.sent_ms > 0 && e.sent_ms + config_.retention_s * 1000 <= now;
}

std::size_t queue_state::advance(std::int64_t now, change_list& out) {
    std::size_t made_available = 0;
    while (!timed_.empty() && timed_.begin()->first <= now) {
        auto it = entries_.find(timed_.begin()->second);
        set_phase(it, phase::available, 0);
        ++made_available;
    }
    // Retention: the oldest messages of each partition first (timestamps mostly follow
    // offsets; one out of order is dropped when selection meets it).
    for (std::int32_t p = 0; p < partitions(); ++p) {
        auto it = entries_.lower_bound({p, min_offset});
        while (it != entries_.end() && it->first.partition == p && expired(it->second, now)) {
            auto next = std::next(it);
            finish(it, false, out);
            it = next;
        }
        advance_cursor(p, out);
    }
    for (auto it = attempts_.begin(); it != attempts_.end();) {
        it = it->second.expires_ms <= now ? attempts_.erase(it) : std::next(it);
    }
    return made_available;
}

void queue_state::purge(const std::vector<std::int64_t>& ends, change_list& out) {
    for (std::int32_t p = 0; p < partitions(); ++p) {
        auto& ps = parts_[static_cast<std::size_t>(p)];
        const std::int64_t target =
            std::max(ps.fetch, static_cast<std::size_t>(p) < ends.size() ? ends[p] : 0);
        auto it = entries_.lower_bound({p, min_offset});
        while (it != entries_.end() && it->first.partition == p) {
            auto next = std::next(it);
            finish(it, false, out);
            it = next;
        }
        skip_to(p, target);
        advance_cursor(p, out);
    }
}

void queue_state::erase_all(change_list& out) const {
    for (std::int32_t p = 0; p < partitions(); ++p) {
        const auto& ps = parts_[static_cast<std::size_t>(p)];
        for (auto o : ps.done_records) {
            out.push_back({state_change::kind::tombstone, {p, o}});
        }
        for (const auto& [o, r] : ps.pending) {
            out.push_back({state_change::kind::tombstone, {p, o}});
        }
        out.push_back({state_change::kind::cursor_tombstone, {p, 0}});
        if (ps.lease_persisted) {
            out.push_back({state_change::kind::lease_tombstone, {p, 0}});
        }
    }
    for (const auto& [ref, e] : entries_) {
        if (e.persisted) {
            out.push_back({state_change::kind::tombstone, ref});
        }
    }
}

// --- receive leases ---------------------------------------------------------------------------

bool queue_state::covered(const std::vector<taken_message>& taken, std::int64_t until_ms,
                          std::int64_t ahead, std::int64_t slack_ms, change_list& out) {
    std::map<std::int32_t, std::int64_t> last;  // partition -> the last offset taken
    for (const auto& t : taken) {
        auto [it, added] = last.try_emplace(t.ref.partition, t.ref.offset);
        if (!added) {
            it->second = std::max(it->second, t.ref.offset);
        }
    }
    bool all = true;
    for (const auto& [p, offset] : last) {
        if (p < 0 || p >= partitions()) {
            continue;
        }
        auto& ps = parts_[static_cast<std::size_t>(p)];
        if (offset < ps.lease_below && until_ms <= ps.lease_until) {
            continue;
        }
        all = false;
        // Never below a record appended before (a concurrent receive's, not stored yet): the
        // last one appended is the one the log keeps.
        ps.written_below = std::max(ps.written_below, offset + 1 + ahead);
        ps.written_until = std::max(ps.written_until, until_ms + slack_ms);
        state_change c;
        c.what = state_change::kind::lease;
        c.ref = {p, ps.written_below};
        c.visible_at_ms = ps.written_until;
        out.push_back(c);
    }
    return all;
}

void queue_state::lease_stored(const change_list& leases) {
    for (const auto& c : leases) {
        if (c.what != state_change::kind::lease || c.ref.partition < 0 ||
            c.ref.partition >= partitions()) {
            continue;
        }
        auto& ps = parts_[static_cast<std::size_t>(c.ref.partition)];
        ps.lease_below = std::max(ps.lease_below, c.ref.offset);
        ps.lease_until = std::max(ps.lease_until, c.visible_at_ms);
        ps.lease_persisted = true;
    }
}

void queue_state::end_leases(std::int64_t now, change_list& out) {
    for (std::int32_t p = 0; p < partitions(); ++p) {
        auto& ps = parts_[static_cast<std::size_t>(p)];
        if (ps.hold_until > now) {
            // An earlier owner's receives may still hold messages below it: the next owner
            // must hold them too.
            state_change c;
            c.what = state_change::kind::lease;
            c.ref = {p, ps.hold_below};
            c.visible_at_ms = ps.hold_until;
            out.push_back(c);
            ps.lease_persisted = true;
            ps.written_below = ps.hold_below;
            ps.written_until = ps.hold_until;
        } else if (ps.lease_persisted) {
            out.push_back({state_change::kind::lease_tombstone, {p, 0}});
            ps.lease_persisted = false;
            ps.written_below = 0;
            ps.written_until = 0;
        }
        ps.lease_below = 0;
        ps.lease_until = 0;
    }
}

std::int64_t queue_state::next_due() const {
    return timed_.empty() ? std::numeric_limits<std::int64_t>::max() : timed_.begin()->first;
}

queue_counts queue_state::counts(std::int64_t now) const {
    queue_counts c;
    c.available = static_cast<std::int64_t>(available_.size());
    c.in_flight = in_flight_;
    c.delayed = delayed_;
    // What advance() would make available now.
    for (auto it = timed_.begin(); it != timed_.end() && it->first <= now; ++it) {
        const auto& e = entries_.at(it->second);
        ++c.available;
        (e.ph == phase::delayed ? c.delayed : c.in_flight) -= 1;
    }
    for (std::int32_t p = 0; p < partitions(); ++p) {
        const auto& ps = parts_[static_cast<std::size_t>(p)];
        c.available += std::max<std::int64_t>(0, ps.log_end - ps.fetch);
        auto it = entries_.lower_bound({p, min_offset});
        if (it != entries_.end() && it->first.partition == p && it->second.sent_ms > 0) {
            c.oldest_sent_ms = c.oldest_sent_ms == 0 ? it->second.sent_ms
                                                     : std::min(c.oldest_sent_ms, it->second.sent_ms);
        }
    }
    return c;
}

bool queue_state::any_below(const std::vector<std::int64_t>& ends) const {
    return undone_below(ends) > 0;
}

std::int64_t queue_state::undone_below(const std::vector<std::int64_t>& ends) const {
    std::int64_t n = 0;
    for (std::int32_t p = 0; p < partitions() && static_cast<std::size_t>(p) < ends.size(); ++p) {
        const auto& ps = parts_[static_cast<std::size_t>(p)];
        n += std::max<std::int64_t>(0, ends[p] - ps.fetch);
        for (auto it = entries_.lower_bound({p, min_offset});
             it != entries_.end() && it->first.partition == p && it->first.offset < ends[p]; ++it) {
            ++n;
        }
    }
    return n;
}

state_change queue_state::record_of(message_ref ref, const entry& e) {
    return {state_change::kind::message, ref, stored_phase::received, e.receive_count,
            e.ph == phase::available ? 0 : e.due, e.first_receive_ms};
}

}  // namespace sluice::backend::queue
