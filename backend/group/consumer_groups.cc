// consumer_groups: the KIP-848 consumer protocol (ConsumerGroupHeartbeat) with server-side
// assignment. compat: validation, member epochs, static members and reconciliation follow
// Kafka's GroupMetadataManager.consumerGroupHeartbeat and CurrentAssignmentBuilder (3.9).
#include "backend/group/consumer_groups.h"

#include <algorithm>
#include <set>

#include "backend/group/consumer_records.h"
#include "backend/group/errc.h"
#include "backend/group/offset_store.h"
#include "backend/log/log_manager.h"
#include "backend/logger.h"

namespace sluice::backend::group {

namespace {

// Timer keys, unique within one group's timer_queue.
std::string session_key(const std::string& member) {
    return "cs\x1f" + member;
}
std::string rebalance_key(const std::string& member) {
    return "cr\x1f" + member;
}

api::consumer_heartbeat_result heartbeat_error(errc e, std::string message = {}) {
    api::consumer_heartbeat_result r;
    r.error = api::backend_error(make_error_code(e), std::move(message));
    return r;
}

/// Whether `owned` lists only partitions of `assigned` (compat: GroupMetadataManager.isSubset).
bool is_subset(const std::optional<std::vector<api::owned_partitions>>& owned,
               const topic_partitions& assigned) {
    if (!owned) {
        return false;
    }
    for (const auto& tp : *owned) {
        auto it = assigned.find(tp.topic_id);
        if (it == assigned.end()) {
            if (!tp.partitions.empty()) {
                return false;
            }
            continue;
        }
        for (partition_id p : tp.partitions) {
            if (!it->second.contains(p.value)) {
                return false;
            }
        }
    }
    return true;
}

std::vector<api::owned_partitions> to_owned(const topic_partitions& tp) {
    std::vector<api::owned_partitions> out;
    for (const auto& [id, parts] : tp) {
        auto& o = out.emplace_back();
        o.topic_id = id;
        for (std::int32_t p : parts) {
            o.partitions.emplace_back(p);
        }
    }
    return out;
}

}  // namespace

consumer_groups::consumer_groups(log::log_manager& log, const coordinator_config& cfg,
                                 const coordinator_clock& clock, offset_store& store,
                                 std::atomic<std::uint64_t>& rebalances,
                                 const group_config_table& configs)
    : log_(log),
      cfg_(cfg),
      clock_(clock),
      store_(store),
      rebalances_(rebalances),
      configs_(configs) {}

std::map<std::string, subscribed_topic> consumer_groups::subscription_metadata(
    const consumer_group& g) {
    std::set<std::string> names;
    std::vector<const topic_regex*> patterns;
    for (const auto& [_, m] : g.members()) {
        names.insert(m.subscribed_topic_names.begin(), m.subscribed_topic_names.end());
        if (m.subscribed_regex &&
            std::find(patterns.begin(), patterns.end(), m.subscribed_regex.get()) ==
                patterns.end()) {
            patterns.push_back(m.subscribed_regex.get());
        }
    }
    std::map<std::string, subscribed_topic> out;
    if (!patterns.empty()) {
        for (const auto& t : log_.list_topics()) {
            if (t.internal) {
                continue;
            }
            // RE2: linear in the name, whatever the pattern.
            for (const topic_regex* re : patterns) {
                if (re->matches(t.name)) {
                    out[t.name] = {t.id, t.partitions};
                    break;
                }
            }
        }
    }
    for (const auto& name : names) {
        if (out.contains(name)) {
            continue;
        }
        if (auto info = log_.find_topic(name)) {
            out[name] = {info->id, info->partitions};
        }
    }
    return out;
}

void consumer_groups::compute_target(consumer_group& g) {
    const auto& meta = g.subscription_metadata();
    topic_sizes sizes;
    for (const auto& [_, t] : meta) {
        sizes[t.id] = t.partitions;
    }
    std::vector<assignor_member> members;
    for (const auto& [id, m] : g.members()) {
        assignor_member am;
        am.member_id = id;
        for (const auto& [name, t] : meta) {
            const bool by_name =
                std::find(m.subscribed_topic_names.begin(), m.subscribed_topic_names.end(), name) !=
                m.subscribed_topic_names.end();
            if (by_name || (m.subscribed_regex && m.subscribed_regex->matches(name))) {
                am.topics.insert(t.id);
            }
        }
        am.current = g.target_of(id);
        members.push_back(std::move(am));
    }
    const std::string assignor = g.preferred_assignor(cfg_.consumer_assignors.front());
    auto target =
        assignor == "range" ? assign_range(members, sizes) : assign_uniform(members, sizes);
    g.set_target_assignment(g.group_epoch(), std::move(target));
    group_log().info(
        "group {}: target assignment for epoch {} computed by the {} assignor "
        "({} members, {} topics)",
        g.id(), g.group_epoch(), assignor, members.size(), sizes.size());
}

void consumer_groups::schedule_session(group_entry& e, const consumer_member& m) {
    const std::string mid = m.member_id;
    e.timers.schedule(session_key(mid), mono() + configs_.session_timeout_ms(e.id, cfg_),
                      [this, &e, mid] { fence_member(e, mid, "session timeout"); });
}

void consumer_groups::schedule_rebalance_timeout(group_entry& e, const consumer_member& m) {
    const std::string mid = m.member_id;
    const std::int32_t at_epoch = m.member_epoch;
    e.timers.schedule(rebalance_key(mid), mono() + m.rebalance_timeout_ms,
                      [this, &e, mid, at_epoch] {
                          if (!e.consumer || e.kind != group_kind::consumer) {
                              return;
                          }
                          auto* gm = e.consumer->member(mid);
                          if (gm != nullptr && gm->member_epoch == at_epoch &&
                              gm->state == member_state::unrevoked_partitions) {
                              fence_member(e, mid, "rebalance timeout");
                          }
                      });
}

void consumer_groups::fence_member(group_entry& e, const std::string& member_id,
                                   const std::string& why) {
    if (e.kind != group_kind::consumer || !e.consumer || e.consumer->member(member_id) == nullptr) {
        return;
    }
    consumer_group& g = *e.consumer;
    e.timers.cancel(session_key(member_id));
    e.timers.cancel(rebalance_key(member_id));
    std::vector<encoded_record> recs;
    add_member_tombstones(recs, e.id, member_id);
    g.remove(member_id);
    g.set_group_epoch(g.group_epoch() + 1);
    if (auto meta = subscription_metadata(g); meta != g.subscription_metadata()) {
        g.set_subscription_metadata(std::move(meta));
        recs.push_back(partition_metadata_record(g));
    }
    recs.push_back(group_epoch_record(g));
    g.touch_state(wall());
    group_log().info("group {}: member {} removed ({}); group epoch {}", e.id, member_id, why,
                     g.group_epoch());
    store_.store_consumer(e, std::move(recs));
}

api::consumer_heartbeat_result consumer_groups::leave(group_entry& e,
                                                      const api::consumer_heartbeat_request& req) {
    if (e.kind != group_kind::consumer || !e.consumer) {
        return heartbeat_error(errc::group_id_not_found,
                               "Group " + e.id + " is not a consumer group.");
    }
    consumer_group& g = *e.consumer;
    api::consumer_heartbeat_result r;
    r.member_id = req.member_id;
    r.member_epoch = req.member_epoch;
    if (!req.instance_id) {
        if (g.member(req.member_id) == nullptr) {
            return heartbeat_error(errc::unknown_member_id);
        }
        fence_member(e, req.member_id, "left the group");
        return r;
    }
    auto sid = g.static_member_id(*req.instance_id);
    if (!sid) {
        return heartbeat_error(errc::unknown_member_id,
                               "Instance id " + *req.instance_id + " is unknown.");
    }
    if (*sid != req.member_id) {
        return heartbeat_error(errc::fenced_instance_id);
    }
    if (req.member_epoch == leave_group_static_member_epoch) {
        // A static member leaving for now keeps its partitions until its session expires or
        // it comes back under a new member id.
        consumer_member m = *g.member(*sid);
        m.member_epoch = leave_group_static_member_epoch;
        m.pending_revocation.clear();
        g.upsert(std::move(m));
        std::vector<encoded_record> recs;
        recs.push_back(member_assignment_record(e.id, *g.member(*sid)));
        store_.store_consumer(e, std::move(recs));
        group_log().info("group {}: static member {} ({}) left temporarily", e.id, *sid,
                         *req.instance_id);
        return r;
    }
    fence_member(e, *sid, "static member left the group");
    return r;
}

std::optional<api::consumer_heartbeat_result> consumer_groups::validate(
    const api::consumer_heartbeat_request& req, std::shared_ptr<const topic_regex>& regex) {
    const std::int32_t epoch = req.member_epoch;
    if (req.group_id.value.empty()) {
        return heartbeat_error(errc::invalid_request, "GroupId can't be empty.");
    }
    if (req.instance_id && req.instance_id->empty()) {
        return heartbeat_error(errc::invalid_request, "InstanceId can't be empty.");
    }
    if (req.rack_id && req.rack_id->empty()) {
        return heartbeat_error(errc::invalid_request, "RackId can't be empty.");
    }
    const bool has_names = req.subscribed_topic_names && !req.subscribed_topic_names->empty();
    const bool has_re = req.subscribed_topic_regex && !req.subscribed_topic_regex->empty();
    if (epoch > 0 || epoch == leave_group_member_epoch) {
        if (req.member_id.empty()) {
            return heartbeat_error(errc::invalid_request, "MemberId can't be empty.");
        }
    } else if (epoch == 0) {
        if (req.rebalance_timeout_ms < 0) {
            return heartbeat_error(errc::invalid_request,
                                   "RebalanceTimeoutMs must be provided in first request.");
        }
        if (!req.topic_partitions || !req.topic_partitions->empty()) {
            return heartbeat_error(errc::invalid_request,
                                   "TopicPartitions must be empty when (re-)joining.");
        }
        if (!has_names && !has_re) {
            return heartbeat_error(errc::invalid_request,
                                   "SubscribedTopicNames or SubscribedTopicRegex must be set in "
                                   "first request.");
        }
    } else if (epoch == leave_group_static_member_epoch) {
        if (req.member_id.empty()) {
            return heartbeat_error(errc::invalid_request, "MemberId can't be empty.");
        }
        if (!req.instance_id) {
            return heartbeat_error(errc::invalid_request, "InstanceId can't be null.");
        }
    } else {
        return heartbeat_error(errc::invalid_request, "MemberEpoch is invalid.");
    }
    if (req.server_assignor &&
        std::find(cfg_.consumer_assignors.begin(), cfg_.consumer_assignors.end(),
                  *req.server_assignor) == cfg_.consumer_assignors.end()) {
        return heartbeat_error(errc::unsupported_assignor,
                               "ServerAssignor " + *req.server_assignor + " is not supported.");
    }
    if (has_re) {
        auto compiled = regexes_.compile(*req.subscribed_topic_regex);
        if (!compiled.regex) {
            return heartbeat_error(errc::invalid_regular_expression,
                                   "SubscribedTopicRegex `" + *req.subscribed_topic_regex +
                                       "` is not a valid regular expression: " +
                                       compiled.error + ".");
        }
        regex = std::move(compiled.regex);
    }
    return std::nullopt;
}

api::consumer_heartbeat_result consumer_groups::heartbeat(
    group_entry& e, const api::consumer_heartbeat_request& req,
    std::shared_ptr<const topic_regex> regex) {
    const std::int32_t epoch = req.member_epoch;
    if (epoch < 0) {
        return leave(e, req);
    }

    // The group: created by a joining member; an empty classic group becomes a consumer group.
    if (!e.classic && !e.consumer) {
        if (epoch != 0) {
            return heartbeat_error(errc::group_id_not_found,
                                   "Consumer group " + e.id + " not found.");
        }
        e.kind = group_kind::consumer;
        e.consumer = std::make_unique<consumer_group>(e.id, wall());
    } else if (e.kind == group_kind::classic) {
        const bool empty_classic = !e.classic || (e.classic->in(classic_state::empty) &&
                                                  e.classic->pending_members() == 0);
        if (epoch != 0 || !empty_classic) {
            return heartbeat_error(errc::group_id_not_found,
                                   "Group " + e.id + " is not a consumer group.");
        }
        const std::int32_t previous_generation = e.classic ? e.classic->generation() : 0;
        e.classic.reset();
        e.kind = group_kind::consumer;
        e.consumer = std::make_unique<consumer_group>(e.id, wall());
        e.consumer->set_group_epoch(previous_generation);
        // compat: Kafka tombstones the classic group's record when it converts the group.
        std::vector<encoded_record> recs;
        recs.push_back(group_tombstone(e.id));
        recs.push_back(group_epoch_record(*e.consumer));
        store_.store_consumer(e, std::move(recs));
        group_log().info("group {}: empty classic group converted to a consumer group", e.id);
    }
    consumer_group& g = *e.consumer;
    if (g.members().size() >= static_cast<std::size_t>(cfg_.consumer_max_size) &&
        (req.member_id.empty() || g.member(req.member_id) == nullptr)) {
        return heartbeat_error(errc::group_max_size_reached,
                               "The consumer group has reached its maximum capacity of " +
                                   std::to_string(cfg_.consumer_max_size) + " members.");
    }
    const std::string member_id =
        req.member_id.empty() ? uuid::random().to_base64() : req.member_id;

    // The member: new, rejoining, replacing a static instance, or heartbeating.
    consumer_member current;
    bool is_new = false;
    bool took_over = false;  // a static member took over an instance under a new member id
    std::vector<encoded_record> recs;
    auto check_epoch =
        [&](const consumer_member& m) -> std::optional<api::consumer_heartbeat_result> {
        if (epoch > m.member_epoch) {
            return heartbeat_error(errc::fenced_member_epoch,
                                   "The member epoch " + std::to_string(epoch) +
                                       " is ahead of the group's " +
                                       std::to_string(m.member_epoch) + ".");
        }
        if (epoch < m.member_epoch &&
            (epoch != m.previous_member_epoch || !is_subset(req.topic_partitions, m.assigned))) {
            return heartbeat_error(errc::fenced_member_epoch,
                                   "The member epoch " + std::to_string(epoch) +
                                       " is behind the group's " + std::to_string(m.member_epoch) +
                                       ".");
        }
        return std::nullopt;
    };
    if (!req.instance_id) {
        if (auto* m = g.member(member_id)) {
            if (epoch != 0) {
                if (auto bad = check_epoch(*m)) {
                    return *bad;
                }
            }
            current = *m;
        } else if (epoch == 0) {
            is_new = true;
            current.member_id = member_id;
        } else {
            return heartbeat_error(
                errc::unknown_member_id,
                "Member " + member_id + " is not a member of group " + e.id + ".");
        }
    } else {
        auto sid = g.static_member_id(*req.instance_id);
        consumer_member* existing = sid ? g.member(*sid) : nullptr;
        if (epoch == 0) {
            if (existing == nullptr) {
                is_new = g.member(member_id) == nullptr;
                current = is_new ? consumer_member{} : *g.member(member_id);
                current.member_id = member_id;
            } else if (existing->member_id == member_id &&
                       existing->member_epoch != leave_group_static_member_epoch) {
                current = *existing;  // the same static member rejoining
            } else if (existing->member_epoch != leave_group_static_member_epoch) {
                return heartbeat_error(errc::unreleased_instance_id,
                                       "Static member " + member_id + " with instance id " +
                                           *req.instance_id +
                                           " cannot join: the instance id is owned by member " +
                                           existing->member_id + ".");
            } else {
                // Take over the instance's partitions under the new member id.
                consumer_member replaced = *existing;
                const std::string old_id = replaced.member_id;
                g.move_target(old_id, member_id);
                e.timers.cancel(session_key(old_id));
                e.timers.cancel(rebalance_key(old_id));
                g.remove(old_id);
                add_member_tombstones(recs, e.id, old_id);
                took_over = true;
                replaced.member_id = member_id;
                replaced.member_epoch = 0;
                replaced.previous_member_epoch = 0;
                replaced.state = member_state::stable;
                replaced.pending_revocation.clear();
                current = std::move(replaced);
                group_log().info("group {}: static member {} replaces {} (instance {})", e.id,
                                 member_id, old_id, *req.instance_id);
            }
        } else {
            if (existing == nullptr) {
                return heartbeat_error(errc::unknown_member_id,
                                       "Instance id " + *req.instance_id + " is unknown.");
            }
            if (existing->member_id != member_id) {
                return heartbeat_error(errc::fenced_instance_id);
            }
            if (auto bad = check_epoch(*existing)) {
                return *bad;
            }
            current = *existing;
        }
    }

    // 1. Update the member; a new member or a changed subscription bumps the group epoch.
    consumer_member updated = current;
    if (req.instance_id) {
        updated.instance_id = req.instance_id;
    }
    if (req.rack_id) {
        updated.rack_id = req.rack_id;
    }
    if (req.rebalance_timeout_ms >= 0) {
        updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
    }
    if (req.server_assignor) {
        updated.server_assignor = req.server_assignor;
    }
    if (req.subscribed_topic_names) {
        updated.subscribed_topic_names.clear();
        for (const auto& t : *req.subscribed_topic_names) {
            updated.subscribed_topic_names.push_back(t.value);
        }
    }
    if (req.subscribed_topic_regex) {
        updated.subscribed_topic_regex = req.subscribed_topic_regex;
        updated.subscribed_regex = std::move(regex);  // null for "": no pattern any more
    }
    updated.client_id = req.client.client_id;
    updated.client_host = req.client.client_host;
    bool bump =
        is_new || updated.subscribed_topic_names != current.subscribed_topic_names ||
        updated.subscribed_topic_regex.value_or("") != current.subscribed_topic_regex.value_or("");
    const topic_partitions before = current.assigned;
    // The records follow Kafka's order: member metadata, subscription metadata, group epoch,
    // target assignment, current assignment.
    const bool fresh = is_new || took_over;  // nothing under this member id on disk yet
    if (fresh || metadata_of(updated) != metadata_of(current)) {
        recs.push_back(member_metadata_record(e.id, updated));
    }
    g.upsert(updated);

    // 2. Topics appear, disappear or grow: that changes the assignment too.
    auto meta = subscription_metadata(g);
    if (meta != g.subscription_metadata()) {
        g.set_subscription_metadata(std::move(meta));
        recs.push_back(partition_metadata_record(g));
        bump = true;
    }
    if (bump) {
        g.set_group_epoch(g.group_epoch() + 1);
        g.touch_state(wall());
        group_log().info("group {}: epoch {} ({})", e.id, g.group_epoch(),
                         is_new ? "member " + member_id + " joined" : "subscriptions changed");
        recs.push_back(group_epoch_record(g));
    }
    if (g.group_epoch() > g.assignment_epoch()) {
        const auto previous = g.target_assignment();
        compute_target(g);
        rebalances_.fetch_add(1, std::memory_order_relaxed);
        std::set<std::string> changed;
        for (const auto& [id, tp] : g.target_assignment()) {
            auto it = previous.find(id);
            if (it == previous.end() || it->second != tp || (took_over && id == member_id)) {
                changed.insert(id);
            }
        }
        for (const auto& [id, _] : previous) {
            if (!g.target_assignment().contains(id)) {
                changed.insert(id);
            }
        }
        for (const auto& id : changed) {
            recs.push_back(member_target_record(g, id));
        }
        recs.push_back(target_epoch_record(g));
    } else if (took_over) {
        recs.push_back(member_target_record(g, member_id));  // moved from the old member id
    }

    // 3. Move the member one step toward its target.
    consumer_member& m = *g.member(member_id);
    const member_state state_before = m.state;
    g.reconcile(m, req.topic_partitions);
    if (m.state == member_state::unrevoked_partitions) {
        if (state_before != member_state::unrevoked_partitions ||
            !e.timers.scheduled(rebalance_key(member_id))) {
            schedule_rebalance_timeout(e, m);
        }
    } else {
        e.timers.cancel(rebalance_key(member_id));
    }
    schedule_session(e, m);
    if (fresh || assignment_of(m) != assignment_of(current)) {
        recs.push_back(member_assignment_record(e.id, m));
    }
    store_.store_consumer(e, std::move(recs));

    api::consumer_heartbeat_result r;
    r.member_id = member_id;
    r.member_epoch = m.member_epoch;
    r.heartbeat_interval_ms = configs_.heartbeat_interval_ms(e.id, cfg_);
    const bool full = epoch == 0 || (req.rebalance_timeout_ms >= 0 &&
                                     (req.subscribed_topic_names || req.subscribed_topic_regex) &&
                                     req.topic_partitions);
    if (full || m.assigned != before) {
        r.assignment = to_owned(m.assigned);
    }
    return r;
}

void consumer_groups::restore(group_entry& e) {
    if (e.kind != group_kind::consumer || !e.consumer) {
        return;
    }
    consumer_group& g = *e.consumer;
    std::vector<consumer_member> recompiled;
    for (const auto& [_, m] : g.members()) {
        if (m.subscribed_topic_regex && !m.subscribed_topic_regex->empty()) {
            consumer_member c = m;
            auto compiled = regexes_.compile(*m.subscribed_topic_regex);
            if (!compiled.regex) {
                group_log().warn("group {}: member {}: stored pattern `{}` does not compile: {}",
                                 e.id, m.member_id, *m.subscribed_topic_regex, compiled.error);
            }
            c.subscribed_regex = std::move(compiled.regex);
            recompiled.push_back(std::move(c));
        }
    }
    for (auto& c : recompiled) {
        g.upsert(std::move(c));
    }
    // compat: GroupMetadataManager.onLoaded: every member gets a session timeout, a member
    // revoking partitions its rebalance timeout.
    for (const auto& [_, m] : g.members()) {
        schedule_session(e, m);
        if (m.state == member_state::unrevoked_partitions) {
            schedule_rebalance_timeout(e, m);
        }
    }
}

std::error_code consumer_groups::validate_commit(group_entry& e,
                                                 const api::offset_commit_request& req,
                                                 bool transactional) {
    consumer_group& g = *e.consumer;
    const std::int32_t gen = req.generation_id_or_member_epoch;
    if (gen < 0 && g.empty()) {
        return {};
    }
    consumer_member* m = g.member(req.member_id);
    if (m == nullptr) {
        return make_error_code(errc::unknown_member_id);
    }
    if (!transactional && !commits_like_v9(req)) {
        // KIP-848 members commit with OffsetCommit v9+.
        return make_error_code(errc::unsupported_version);
    }
    if (gen > m->member_epoch) {
        return make_error_code(errc::fenced_member_epoch);
    }
    if (gen < m->member_epoch) {
        // compat: validateTransactionalOffsetCommit turns a stale epoch into
        // ILLEGAL_GENERATION.
        return make_error_code(transactional ? errc::illegal_generation : errc::stale_member_epoch);
    }
    return {};
}

std::error_code consumer_groups::validate_fetch(group_entry& e,
                                                const api::offset_fetch_request& req) {
    if (e.kind != group_kind::consumer || !e.consumer || (!req.member_id && req.member_epoch < 0)) {
        return {};
    }
    const consumer_member* m = e.consumer->member(req.member_id.value_or(""));
    if (m == nullptr) {
        return make_error_code(errc::unknown_member_id);
    }
    if (req.member_epoch != m->member_epoch) {
        return make_error_code(errc::stale_member_epoch);
    }
    return {};
}

}  // namespace sluice::backend::group
