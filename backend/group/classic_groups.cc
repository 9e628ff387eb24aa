// classic_groups: the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).
// compat: the transitions follow Kafka's GroupMetadataManager (3.9) for classic groups:
// the MEMBER_ID_REQUIRED round trip, the initial rebalance delay, static member replacement,
// the rebalance and sync timeouts, and the error for each invalid call.
#include "backend/group/classic_groups.h"

#include <algorithm>

#include "backend/group/errc.h"
#include "backend/group/offset_store.h"
#include "backend/logger.h"

namespace sluice::backend::group {

namespace {

// Timer keys, unique within one group's timer_queue.
std::string heartbeat_key(const std::string& member) {
    return "hb\x1f" + member;
}
constexpr const char* join_key = "join";
constexpr const char* sync_key = "sync";

api::join_group_result join_error(errc e, std::string member_id) {
    api::join_group_result r;
    r.error = make_error_code(e);
    r.member_id = std::move(member_id);
    return r;
}

api::sync_group_result sync_error(errc e) {
    api::sync_group_result r;
    r.error = make_error_code(e);
    return r;
}

/// compat: ClassicGroup.validateMember.
std::error_code validate_member(const classic_group& g, const std::string& member_id,
                                const std::optional<std::string>& instance_id) {
    if (instance_id) {
        auto existing = g.static_member_id(*instance_id);
        if (!existing) {
            return make_error_code(errc::unknown_member_id);
        }
        if (*existing != member_id) {
            return make_error_code(errc::fenced_instance_id);
        }
    }
    if (!g.has_member(member_id)) {
        return make_error_code(errc::unknown_member_id);
    }
    return {};
}

/// compat: GroupMetadataManager.isProtocolInconsistent: both set and different.
bool inconsistent(const std::optional<std::string>& a, const std::optional<std::string>& b) {
    return a && b && *a != *b;
}

/// The classic group of `e`, or null when `e` holds none (or a KIP-848 group).
classic_group* classic_in(group_entry& e) {
    return e.kind == group_kind::classic ? e.classic.get() : nullptr;
}

}  // namespace

classic_groups::classic_groups(const coordinator_config& cfg, const coordinator_clock& clock,
                               offset_store& store, std::atomic<std::uint64_t>& rebalances)
    : cfg_(cfg), clock_(clock), store_(store), rebalances_(rebalances) {}

classic_group* classic_groups::classic_of(group_entry& e, bool create) {
    if (e.kind == group_kind::consumer) {
        // compat: an empty consumer group turns into a classic group when a classic member
        // joins (GroupMetadataManager.maybeDeleteEmptyConsumerGroup); offsets stay. An empty
        // consumer group has no member timeouts left.
        if (!create || (e.consumer && !e.consumer->empty())) {
            return nullptr;
        }
        if (e.consumer) {
            std::vector<encoded_record> recs;
            offset_store::add_group_tombstones(e, recs);
            if (auto w = store_.append(e.id, std::move(recs)); !w) {
                group_log().warn("group {}: tombstones of the consumer group not written: {}",
                                 e.id, w.error().message());
            }
        }
        e.consumer.reset();
        e.kind = group_kind::classic;
    }
    if (!e.classic) {
        if (!create) {
            return nullptr;
        }
        e.classic = std::make_unique<classic_group>(e.id, wall());
    }
    return e.classic.get();
}

bool classic_groups::accept_joining_member(const classic_group& g,
                                           const std::string& member_id) const {
    const auto max = static_cast<std::size_t>(cfg_.max_size);
    switch (g.state()) {
        case classic_state::empty:
        case classic_state::dead:
            return true;
        case classic_state::preparing_rebalance: {
            const auto* m = g.members().contains(member_id) ? &g.members().at(member_id) : nullptr;
            return (m != nullptr && m->awaiting_join_response()) || g.num_awaiting_join() < max;
        }
        case classic_state::completing_rebalance:
        case classic_state::stable:
            return g.has_member(member_id) || g.size() < max;
    }
    return false;
}

void classic_groups::join(group_entry& e, api::join_group_request req, join_callback done) {
    if (req.session_timeout_ms < cfg_.min_session_timeout_ms ||
        req.session_timeout_ms > cfg_.max_session_timeout_ms) {
        done(join_error(errc::invalid_session_timeout, req.member_id));
        return;
    }
    if (req.rebalance_timeout_ms < 0) {
        req.rebalance_timeout_ms = req.session_timeout_ms;  // JoinGroup v0
    }
    if (e.kind == group_kind::consumer && e.consumer && !e.consumer->empty()) {
        // Classic members cannot join a group that runs the KIP-848 protocol (no online
        // migration here).
        done(join_error(errc::inconsistent_group_protocol, req.member_id));
        return;
    }
    const bool unknown_member = req.member_id.empty();
    classic_group* g = classic_of(e, unknown_member);
    if (g == nullptr) {
        done(join_error(errc::unknown_member_id, req.member_id));
        return;
    }
    if (!accept_joining_member(*g, req.member_id)) {
        g->remove(req.member_id);
        group_log().info("group {}: join refused, group.max.size {} reached", e.id, cfg_.max_size);
        done(join_error(errc::group_max_size_reached, ""));
    } else if (unknown_member) {
        join_new_member(e, req, done);
    } else {
        join_existing_member(e, req, done);
    }
}

void classic_groups::join_new_member(group_entry& e, api::join_group_request& req,
                                     join_callback& done) {
    classic_group& g = *e.classic;
    if (g.in(classic_state::dead)) {
        done(join_error(errc::coordinator_unavailable, ""));
        return;
    }
    if (!g.supports_protocols(req.protocol_type, req.protocols)) {
        done(join_error(errc::inconsistent_group_protocol, ""));
        return;
    }
    const std::string prefix =
        req.group_instance_id ? *req.group_instance_id : req.client.client_id;
    const std::string new_id = prefix + "-" + uuid::random().to_string();
    if (req.group_instance_id) {
        if (auto existing = g.static_member_id(*req.group_instance_id)) {
            group_log().info("group {}: static member {} rejoins in state {}; replacing member {}",
                             g.id(), *req.group_instance_id, to_string(g.state()), *existing);
            update_static_member(e, req, *existing, new_id, std::move(done));
        } else {
            add_member_and_rebalance(e, req, new_id, std::move(done));
        }
        return;
    }
    if (req.require_known_member_id) {
        // JoinGroup v4+: hand out an id and expect the member back with it.
        g.add_pending_member(new_id);
        e.timers.schedule(heartbeat_key(new_id), mono() + req.session_timeout_ms,
                          [this, &e, new_id] { expire_member(e, new_id); });
        group_log().debug("group {}: new member {} must rejoin with its id", g.id(), new_id);
        done(join_error(errc::member_id_required, new_id));
        return;
    }
    add_member_and_rebalance(e, req, new_id, std::move(done));
}

void classic_groups::join_existing_member(group_entry& e, api::join_group_request& req,
                                          join_callback& done) {
    classic_group& g = *e.classic;
    const std::string& member_id = req.member_id;
    if (g.in(classic_state::dead)) {
        done(join_error(errc::coordinator_unavailable, member_id));
        return;
    }
    if (!g.supports_protocols(req.protocol_type, req.protocols)) {
        done(join_error(errc::inconsistent_group_protocol, member_id));
        return;
    }
    if (g.is_pending_member(member_id)) {
        if (req.group_instance_id) {
            // A pending id was handed to a dynamic member; a static one cannot claim it.
            done(join_error(errc::unknown_member_id, member_id));
            return;
        }
        add_member_and_rebalance(e, req, member_id, std::move(done));
        return;
    }
    if (auto ec = validate_member(g, member_id, req.group_instance_id)) {
        api::join_group_result r;
        r.error = ec;
        r.member_id = member_id;
        done(std::move(r));
        return;
    }
    classic_member& m = *g.member(member_id);
    auto current = [&](bool with_members) {
        api::join_group_result r;
        r.member_id = member_id;
        r.generation_id = g.generation();
        r.protocol_name = g.protocol_name();
        r.protocol_type = g.protocol_type();
        r.leader = g.leader_or_empty();
        if (with_members) {
            r.members = g.join_members();
        }
        return r;
    };
    switch (g.state()) {
        case classic_state::preparing_rebalance:
            update_member_and_rebalance(e, m, req, std::move(done),
                                        "member joins during PreparingRebalance");
            return;
        case classic_state::completing_rebalance:
            if (m.matches(req.protocols)) {
                // The member lost the JoinGroup response: send the current generation again.
                done(current(g.is_leader(member_id)));
            } else {
                update_member_and_rebalance(e, m, req, std::move(done), "member metadata changed");
            }
            return;
        case classic_state::stable:
            if (g.is_leader(member_id) || !m.matches(req.protocols)) {
                update_member_and_rebalance(
                    e, m, req, std::move(done),
                    g.is_leader(member_id) ? "leader rejoins" : "member metadata changed");
            } else {
                done(current(false));
            }
            return;
        case classic_state::empty:
        case classic_state::dead:
            done(join_error(errc::unknown_member_id, member_id));
            return;
    }
}

void classic_groups::add_member_and_rebalance(group_entry& e, api::join_group_request& req,
                                              const std::string& member_id, join_callback done) {
    classic_group& g = *e.classic;
    classic_member m;
    m.member_id = member_id;
    m.group_instance_id = req.group_instance_id;
    m.client_id = req.client.client_id;
    m.client_host = req.client.client_host;
    m.rebalance_timeout_ms = req.rebalance_timeout_ms;
    m.session_timeout_ms = req.session_timeout_ms;
    m.protocol_type = req.protocol_type;
    m.protocols = std::move(req.protocols);
    m.is_new = true;
    if (g.in(classic_state::preparing_rebalance) && g.previous_state() == classic_state::empty) {
        g.set_new_member_added(true);
    }
    g.add(std::move(m), std::move(done));
    // A new member cannot heartbeat while its JoinGroup is parked; bound how long it waits.
    reschedule_heartbeat(e, *g.member(member_id), cfg_.new_member_join_timeout_ms);
    group_log().debug("group {}: member {} (instance {}, client '{}') added", g.id(), member_id,
                      req.group_instance_id.value_or("-"), req.client.client_id);
    maybe_prepare_rebalance(e, "new member " + member_id);
}

void classic_groups::update_static_member(group_entry& e, api::join_group_request& req,
                                          const std::string& old_id, const std::string& new_id,
                                          join_callback done) {
    classic_group& g = *e.classic;
    const std::string current_leader = g.leader_or_empty();
    e.timers.cancel(heartbeat_key(old_id));
    classic_member& m = g.replace_static_member(*req.group_instance_id, old_id, new_id);
    reschedule_heartbeat(e, m, m.session_timeout_ms);
    g.update(m, std::move(req.protocols), req.rebalance_timeout_ms, req.session_timeout_ms,
             std::move(done));
    if (g.in(classic_state::stable)) {
        if (g.protocol_name().value_or("") == g.select_protocol()) {
            // compat: a static member replacing itself in a Stable group with the same
            // protocol does not trigger a rebalance; the group is stored with the new id.
            store_.store_group(e);
            api::join_group_result r;
            r.member_id = new_id;
            r.generation_id = g.generation();
            r.protocol_name = g.protocol_name();
            r.protocol_type = g.protocol_type();
            if (req.supports_skip_assignment) {
                const bool leader = g.is_leader(new_id);
                r.leader = g.leader_or_empty();
                r.skip_assignment = leader;
                if (leader) {
                    r.members = g.join_members();
                }
            } else {
                r.leader = current_leader;
            }
            g.complete_join(m, std::move(r));
            return;
        }
        maybe_prepare_rebalance(e, "static member " + new_id + " changed protocols");
        return;
    }
    if (g.in(classic_state::completing_rebalance)) {
        prepare_rebalance(e, "static member " + new_id + " rejoined during sync");
        return;
    }
    maybe_complete_join(e);
}

void classic_groups::update_member_and_rebalance(group_entry& e, classic_member& m,
                                                 api::join_group_request& req, join_callback done,
                                                 const std::string& reason) {
    e.classic->update(m, std::move(req.protocols), req.rebalance_timeout_ms, req.session_timeout_ms,
                      std::move(done));
    maybe_prepare_rebalance(e, reason);
}

void classic_groups::maybe_prepare_rebalance(group_entry& e, const std::string& reason) {
    if (e.classic->can_rebalance()) {
        prepare_rebalance(e, reason);
    } else {
        maybe_complete_join(e);
    }
}

void classic_groups::prepare_rebalance(group_entry& e, const std::string& reason) {
    classic_group& g = *e.classic;
    if (g.in(classic_state::completing_rebalance)) {
        for (auto& [_, m] : g.members()) {
            m.assignment.clear();
        }
        propagate_assignment(e, make_error_code(errc::rebalance_in_progress));
    }
    g.clear_pending_sync();
    e.timers.cancel(sync_key);

    const bool initial = g.in(classic_state::empty);
    if (initial) {
        // A new group waits a little for more members (group.initial.rebalance.delay.ms).
        const std::int32_t delay = cfg_.initial_rebalance_delay_ms;
        const std::int32_t remaining = std::max(g.rebalance_timeout_ms() - delay, 0);
        e.timers.schedule(join_key, mono() + delay, [this, &e, delay, remaining] {
            initial_rebalance_step(e, delay, remaining);
        });
    }
    g.transition_to(classic_state::preparing_rebalance, wall());
    group_log().info("group {}: preparing to rebalance (generation {}): {}", g.id(), g.generation(),
                     reason);
    if (initial) {
        return;
    }
    if (g.all_members_joined()) {
        complete_join(e);
    } else {
        e.timers.schedule(join_key, mono() + g.rebalance_timeout_ms(),
                          [this, &e] { complete_join(e); });
    }
}

void classic_groups::initial_rebalance_step(group_entry& e, std::int32_t delay_ms,
                                            std::int32_t remaining_ms) {
    classic_group* g = classic_in(e);
    if (g == nullptr) {
        return;
    }
    if (g->new_member_added() && remaining_ms != 0) {
        g->set_new_member_added(false);
        const std::int32_t next_delay = std::min(cfg_.initial_rebalance_delay_ms, remaining_ms);
        const std::int32_t next_remaining = std::max(remaining_ms - delay_ms, 0);
        e.timers.schedule(join_key, mono() + next_delay, [this, &e, next_delay, next_remaining] {
            initial_rebalance_step(e, next_delay, next_remaining);
        });
        return;
    }
    complete_join(e);
}

void classic_groups::maybe_complete_join(group_entry& e) {
    const classic_group& g = *e.classic;
    if (g.in(classic_state::preparing_rebalance) && g.all_members_joined() &&
        g.previous_state() != classic_state::empty) {
        complete_join(e);
    }
}

void classic_groups::complete_join(group_entry& e) {
    e.timers.cancel(join_key);
    classic_group* gp = classic_in(e);
    if (gp == nullptr || !gp->in(classic_state::preparing_rebalance)) {
        return;
    }
    classic_group& g = *gp;
    std::vector<std::string> gone;
    for (const auto& [id, m] : g.members()) {
        if (!m.awaiting_join_response() && !m.group_instance_id) {
            gone.push_back(id);
        }
    }
    for (const auto& id : gone) {
        g.remove(id);
        e.timers.cancel(heartbeat_key(id));
    }
    if (!gone.empty()) {
        group_log().info("group {}: removed {} members that did not rejoin", e.id, gone.size());
    }
    if (!g.maybe_elect_new_joined_leader() && !g.empty()) {
        // Nobody rejoined: wait another rebalance timeout for session expirations.
        group_log().warn("group {}: no member rejoined; extending the rebalance", e.id);
        e.timers.schedule(join_key, mono() + g.rebalance_timeout_ms(),
                          [this, &e] { complete_join(e); });
        return;
    }
    g.init_next_generation(wall());
    if (g.in(classic_state::empty)) {
        group_log().info("group {}: generation {} is empty", e.id, g.generation());
        store_.store_group(e);
        return;
    }
    rebalances_.fetch_add(1, std::memory_order_relaxed);
    group_log().info("group {}: generation {} with {} members, protocol {}, leader {}", e.id,
                     g.generation(), g.size(), g.protocol_name().value_or(""), g.leader_or_empty());
    for (auto& [id, m] : g.members()) {
        api::join_group_result r;
        r.member_id = id;
        r.generation_id = g.generation();
        r.protocol_name = g.protocol_name();
        r.protocol_type = g.protocol_type();
        r.leader = g.leader_or_empty();
        if (g.is_leader(id)) {
            r.members = g.join_members();
        }
        g.complete_join(m, std::move(r));
        reschedule_heartbeat(e, m, m.session_timeout_ms);
        m.is_new = false;
        g.add_pending_sync(id);
    }
    const std::int32_t generation = g.generation();
    e.timers.schedule(sync_key, mono() + g.rebalance_timeout_ms(),
                      [this, &e, generation] { expire_pending_sync(e, generation); });
}

void classic_groups::reschedule_heartbeat(group_entry& e, const classic_member& m,
                                          std::int64_t timeout_ms) {
    const std::string mid = m.member_id;
    e.timers.schedule(heartbeat_key(mid), mono() + timeout_ms,
                      [this, &e, mid] { expire_member(e, mid); });
}

void classic_groups::maybe_drop(group_entry& e) {
    if (!e.offsets.empty() || e.kind != group_kind::classic || !e.classic) {
        return;
    }
    if (e.classic->in(classic_state::empty) && e.classic->pending_members() == 0) {
        e.clear();  // the registry erases the entry when it is released
    }
}

void classic_groups::expire_member(group_entry& e, const std::string& member_id) {
    classic_group* g = classic_in(e);
    if (g == nullptr || g->in(classic_state::dead)) {
        return;
    }
    if (g->is_pending_member(member_id)) {
        group_log().info("group {}: pending member {} never joined; removed", e.id, member_id);
        g->remove(member_id);
        if (g->in(classic_state::preparing_rebalance) && g->all_members_joined()) {
            complete_join(e);
        }
        maybe_drop(e);
        return;
    }
    classic_member* m = g->member(member_id);
    if (m == nullptr || m->has_satisfied_heartbeat()) {
        return;
    }
    group_log().info("group {}: member {} session expired; removing it", e.id, member_id);
    remove_member_and_update(e, member_id, "session timeout of " + member_id);
}

void classic_groups::remove_member_and_update(group_entry& e, const std::string& member_id,
                                              const std::string& reason) {
    classic_group& g = *e.classic;
    if (classic_member* m = g.member(member_id)) {
        g.complete_join(*m, join_error(errc::unknown_member_id, ""));
        g.complete_sync(*m, sync_error(errc::unknown_member_id));
    }
    e.timers.cancel(heartbeat_key(member_id));
    g.remove(member_id);
    if (g.in(classic_state::stable) || g.in(classic_state::completing_rebalance)) {
        maybe_prepare_rebalance(e, reason);
    } else if (g.in(classic_state::preparing_rebalance) && g.all_members_joined()) {
        complete_join(e);
    }
}

void classic_groups::expire_pending_sync(group_entry& e, std::int32_t generation) {
    classic_group* g = classic_in(e);
    if (g == nullptr || g->generation() != generation) {
        return;
    }
    if (!(g->in(classic_state::completing_rebalance) || g->in(classic_state::stable)) ||
        g->received_sync_from_all()) {
        return;
    }
    const auto late = g->pending_sync();
    for (const auto& id : late) {
        if (auto* m = g->member(id)) {
            g->complete_sync(*m, sync_error(errc::unknown_member_id));
        }
        g->remove(id);
        e.timers.cancel(heartbeat_key(id));
    }
    group_log().info("group {}: {} members did not send SyncGroup in time; rebalancing", e.id,
                     late.size());
    prepare_rebalance(e, "members missed the sync deadline");
}

void classic_groups::propagate_assignment(group_entry& e, std::error_code error) {
    classic_group& g = *e.classic;
    for (auto& [_, m] : g.members()) {
        api::sync_group_result r;
        r.error = error;
        if (!error) {
            r.protocol_name = g.protocol_name();
            r.protocol_type = g.protocol_type();
        }
        r.assignment = m.assignment;
        if (g.complete_sync(m, std::move(r))) {
            reschedule_heartbeat(e, m, m.session_timeout_ms);
        }
    }
}

void classic_groups::sync(group_entry& e, api::sync_group_request req, sync_callback done) {
    classic_group* gp = classic_in(e);
    if (gp == nullptr || gp->in(classic_state::empty)) {
        done(sync_error(errc::unknown_member_id));
        return;
    }
    classic_group& g = *gp;
    if (g.in(classic_state::dead)) {
        done(sync_error(errc::coordinator_unavailable));
        return;
    }
    if (auto ec = validate_member(g, req.member_id, req.group_instance_id)) {
        api::sync_group_result r;
        r.error = ec;
        done(std::move(r));
        return;
    }
    if (req.generation_id != g.generation()) {
        done(sync_error(errc::illegal_generation));
        return;
    }
    if (inconsistent(req.protocol_type, g.protocol_type()) ||
        inconsistent(req.protocol_name, g.protocol_name())) {
        done(sync_error(errc::inconsistent_group_protocol));
        return;
    }
    auto drop_pending_sync = [&] {
        g.remove_pending_sync(req.member_id);
        if (g.received_sync_from_all()) {
            e.timers.cancel(sync_key);
        }
    };
    if (g.in(classic_state::preparing_rebalance)) {
        done(sync_error(errc::rebalance_in_progress));
        return;
    }
    if (g.in(classic_state::stable)) {
        drop_pending_sync();
        api::sync_group_result r;
        r.protocol_type = g.protocol_type();
        r.protocol_name = g.protocol_name();
        r.assignment = g.member(req.member_id)->assignment;
        done(std::move(r));
        return;
    }
    // CompletingRebalance: park until the leader's assignment arrives.
    classic_member& m = *g.member(req.member_id);
    if (m.awaiting_sync_response()) {
        // A second SyncGroup while one is parked: answer the older one now.
        g.complete_sync(m, sync_error(errc::rebalance_in_progress));
    }
    m.awaiting_sync = std::move(done);
    drop_pending_sync();
    if (!g.is_leader(req.member_id)) {
        return;
    }
    std::size_t missing = 0;
    for (auto& [id, member] : g.members()) {
        auto it = req.assignments.find(id);
        if (it == req.assignments.end()) {
            member.assignment.clear();
            ++missing;
        } else {
            member.assignment = std::move(it->second);
        }
    }
    if (missing > 0) {
        group_log().warn("group {}: leader {} sent no assignment for {} members (generation {})",
                         g.id(), req.member_id, missing, g.generation());
    }
    // Persist the generation and its assignment before the members learn it.
    std::vector<encoded_record> recs;
    recs.push_back(group_record(g.id(), g.to_stored()));
    if (auto w = store_.append(g.id(), std::move(recs)); !w) {
        group_log().warn("group {}: storing generation {} failed: {}", g.id(), g.generation(),
                         w.error().message());
        for (auto& [_, member] : g.members()) {
            member.assignment.clear();
        }
        propagate_assignment(e, w.error());
        maybe_prepare_rebalance(e, "storing the assignment failed");
        return;
    }
    propagate_assignment(e, {});
    g.transition_to(classic_state::stable, wall());
}

std::error_code classic_groups::heartbeat(group_entry& e, const api::heartbeat_request& req) {
    classic_group* gp = classic_in(e);
    if (gp == nullptr) {
        return make_error_code(errc::unknown_member_id);
    }
    classic_group& g = *gp;
    if (g.in(classic_state::dead)) {
        return make_error_code(errc::coordinator_unavailable);
    }
    if (auto ec = validate_member(g, req.member_id, req.group_instance_id)) {
        return ec;
    }
    if (req.generation_id != g.generation()) {
        return make_error_code(errc::illegal_generation);
    }
    classic_member& m = *g.member(req.member_id);
    switch (g.state()) {
        case classic_state::empty:
        case classic_state::dead:
            return make_error_code(errc::unknown_member_id);
        case classic_state::preparing_rebalance:
            reschedule_heartbeat(e, m, m.session_timeout_ms);
            return make_error_code(errc::rebalance_in_progress);
        case classic_state::completing_rebalance:
        case classic_state::stable:
            reschedule_heartbeat(e, m, m.session_timeout_ms);
            return {};
    }
    return {};
}

api::leave_group_result classic_groups::leave(group_entry& e,
                                              const std::vector<api::leave_member>& members) {
    api::leave_group_result out;
    if (e.kind != group_kind::classic || !e.classic) {
        // No classic members live in a KIP-848 group here.
        for (const auto& lm : members) {
            out.members.push_back(
                {lm.member_id, lm.group_instance_id, make_error_code(errc::unknown_member_id)});
        }
        return out;
    }
    classic_group& g = *e.classic;
    if (g.in(classic_state::dead)) {
        out.error = make_error_code(errc::coordinator_unavailable);
        return out;
    }
    auto remove_current = [&](const std::string& id, const std::optional<std::string>& reason) {
        group_log().info("group {}: member {} left (reason: {})", e.id, id,
                         reason.value_or("not provided"));
        e.timers.cancel(heartbeat_key(id));
        if (auto* m = g.member(id)) {
            g.complete_join(*m, join_error(errc::unknown_member_id, ""));
        }
        g.remove(id);
    };
    std::size_t left = 0;
    for (const auto& lm : members) {
        api::leave_member_result r{lm.member_id, lm.group_instance_id, {}};
        if (lm.member_id.empty()) {
            // Administrative removal of a static member by its instance id.
            if (lm.group_instance_id && g.has_static_member(*lm.group_instance_id)) {
                remove_current(*g.static_member_id(*lm.group_instance_id), lm.reason);
                ++left;
            } else {
                r.error = make_error_code(errc::unknown_member_id);
            }
        } else if (g.is_pending_member(lm.member_id)) {
            g.remove(lm.member_id);
            e.timers.cancel(heartbeat_key(lm.member_id));
            ++left;
        } else if (auto ec = validate_member(g, lm.member_id, lm.group_instance_id)) {
            r.error = ec;
        } else {
            remove_current(lm.member_id, lm.reason);
            ++left;
        }
        out.members.push_back(std::move(r));
    }
    if (left > 0) {
        switch (g.state()) {
            case classic_state::stable:
            case classic_state::completing_rebalance:
                maybe_prepare_rebalance(e, "members left");
                break;
            case classic_state::preparing_rebalance:
                maybe_complete_join(e);
                break;
            case classic_state::empty:
            case classic_state::dead:
                break;
        }
    }
    return out;
}

std::error_code classic_groups::validate_commit(group_entry& e,
                                                const api::offset_commit_request& req,
                                                bool transactional) {
    const std::int32_t gen = req.generation_id_or_member_epoch;
    if (!e.classic && !e.consumer) {
        if (gen < 0) {
            // A "simple" group: a consumer that assigns partitions itself, or an admin.
            e.kind = group_kind::classic;
            e.classic = std::make_unique<classic_group>(e.id, wall());
            return {};
        }
        // compat: v9+ answers GROUP_ID_NOT_FOUND; older versions (and TxnOffsetCommit)
        // ILLEGAL_GENERATION.
        return make_error_code(commits_like_v9(req) && !transactional ? errc::group_id_not_found
                                                                      : errc::illegal_generation);
    }
    classic_group* gp = classic_in(e);
    if (gp == nullptr) {
        // A KIP-848 group: the coordinator asks consumer_groups.
        return make_error_code(errc::unknown_member_id);
    }
    classic_group& g = *gp;
    if (g.in(classic_state::dead)) {
        return make_error_code(errc::coordinator_unavailable);
    }
    if (gen < 0 && g.in(classic_state::empty)) {
        return {};
    }
    if (gen >= 0 || !req.member_id.empty() || req.group_instance_id) {
        if (auto ec = validate_member(g, req.member_id, req.group_instance_id)) {
            return ec;
        }
        if (gen != g.generation()) {
            return make_error_code(errc::illegal_generation);
        }
    } else if (!transactional && !g.in(classic_state::empty)) {
        return make_error_code(errc::unknown_member_id);
    }
    if (!transactional && g.in(classic_state::completing_rebalance)) {
        return make_error_code(errc::rebalance_in_progress);
    }
    // A commit keeps a classic member's session alive (Stable or PreparingRebalance).
    if (g.in(classic_state::stable) || g.in(classic_state::preparing_rebalance)) {
        if (auto* m = g.member(req.member_id)) {
            reschedule_heartbeat(e, *m, m->session_timeout_ms);
        }
    }
    return {};
}

void classic_groups::restore(group_entry& e) {
    if (classic_group* g = classic_in(e)) {
        for (auto& [_, m] : g->members()) {
            reschedule_heartbeat(e, m, m.session_timeout_ms);
        }
    }
}

void classic_groups::answer_parked(group_entry& e) {
    classic_group* g = classic_in(e);
    if (g == nullptr) {
        return;
    }
    // The members retry against the restarted broker.
    for (auto& [mid, m] : g->members()) {
        g->complete_join(m, join_error(errc::coordinator_unavailable, mid));
        g->complete_sync(m, sync_error(errc::coordinator_unavailable));
    }
}

}  // namespace sluice::backend::group
