// group_coordinator: committed offsets (OffsetCommit, OffsetFetch, OffsetDelete), group
// deletion and offset expiration. compat: validation follows Kafka's OffsetMetadataManager and
// the groups' validateOffsetCommit/Fetch/Delete (3.9).
#include "backend/group/consumer_protocol.h"
#include "backend/group/errc.h"
#include "backend/group/group_coordinator.h"
#include "backend/log/log_manager.h"
#include "backend/logger.h"

namespace sluice::backend::group {

namespace {

/// compat: ClassicGroup.validateMember (as in the classic protocol file).
std::error_code validate_classic_member(const classic_group& g, const std::string& member_id,
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

api::offset_commit_result commit_skeleton(const api::offset_commit_request& req,
                                          std::error_code ec) {
    api::offset_commit_result out;
    for (const auto& t : req.topics) {
        api::commit_topic_result tr;
        tr.topic = t.topic;
        for (const auto& p : t.partitions) {
            tr.partitions.push_back({p.partition, ec});
        }
        out.topics.push_back(std::move(tr));
    }
    return out;
}

/// compat: OffsetExpirationConditionImpl.isOffsetExpired.
bool expired(const committed_offset& c, std::int64_t base_ms, std::int64_t now_ms,
             std::int64_t retention_ms) {
    if (c.expire_timestamp_ms >= 0) {
        return now_ms >= c.expire_timestamp_ms;
    }
    return now_ms - base_ms >= retention_ms;
}

}  // namespace

std::error_code group_coordinator::validate_commit_locked(group_entry* e,
                                                          const api::offset_commit_request& req,
                                                          bool transactional) {
    const std::int32_t gen = req.generation_id_or_member_epoch;
    // -1: a front that is not Kafka, committing as the newest version does.
    const bool v9_or_later = req.api_version < 0 || req.api_version >= 9;
    if (e == nullptr) {
        if (gen < 0) {
            // A "simple" group: a consumer that assigns partitions itself, or an admin.
            auto& fresh = groups_[req.group_id.value];
            fresh.kind = group_kind::classic;
            fresh.classic = std::make_unique<classic_group>(req.group_id.value, wall());
            return {};
        }
        // compat: v9+ answers GROUP_ID_NOT_FOUND; older versions (and TxnOffsetCommit)
        // ILLEGAL_GENERATION.
        return make_error_code(v9_or_later && !transactional ? errc::group_id_not_found
                                                             : errc::illegal_generation);
    }
    if (e->kind == group_kind::consumer && e->consumer) {
        consumer_group& g = *e->consumer;
        if (gen < 0 && g.empty()) {
            return {};
        }
        consumer_member* m = g.member(req.member_id);
        if (m == nullptr) {
            return make_error_code(errc::unknown_member_id);
        }
        if (!transactional && !v9_or_later) {
            // KIP-848 members commit with OffsetCommit v9+.
            return make_error_code(errc::unsupported_version);
        }
        if (gen > m->member_epoch) {
            return make_error_code(errc::fenced_member_epoch);
        }
        if (gen < m->member_epoch) {
            // compat: validateTransactionalOffsetCommit turns a stale epoch into
            // ILLEGAL_GENERATION.
            return make_error_code(transactional ? errc::illegal_generation
                                                 : errc::stale_member_epoch);
        }
        return {};
    }
    if (!e->classic) {
        e->classic = std::make_unique<classic_group>(req.group_id.value, wall());
    }
    classic_group& g = *e->classic;
    if (g.in(classic_state::dead)) {
        return make_error_code(errc::coordinator_unavailable);
    }
    if (gen < 0 && g.in(classic_state::empty)) {
        return {};
    }
    if (gen >= 0 || !req.member_id.empty() || req.group_instance_id) {
        if (auto ec = validate_classic_member(g, req.member_id, req.group_instance_id)) {
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
            reschedule_heartbeat_locked(g, *m, m->session_timeout_ms);
        }
    }
    return {};
}

api::offset_commit_result group_coordinator::commit_offsets_now(
    const api::offset_commit_request& req) {
    std::lock_guard lock(mu_);
    if (auto ec = check_loaded()) {
        return commit_skeleton(req, ec);
    }
    const std::string& group_id = req.group_id.value;
    if (group_id.empty()) {
        return commit_skeleton(req, make_error_code(errc::invalid_group_id));
    }
    if (auto ec = validate_commit_locked(find_locked(group_id), req, false)) {
        group_log().debug("group {}: commit from member '{}' (generation/epoch {}) refused: {}",
                          group_id, req.member_id, req.generation_id_or_member_epoch, ec.message());
        return commit_skeleton(req, ec);
    }
    api::offset_commit_result out = commit_skeleton(req, {});
    const std::int64_t now = wall();
    std::vector<encoded_record> records;
    struct pending {
        const std::string* topic;
        std::int32_t partition;
        committed_offset value;
        std::error_code* error;
    };
    std::vector<pending> applied;
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        const auto& t = req.topics[ti];
        auto info = log_.find_topic(t.topic.value);
        for (std::size_t pi = 0; pi < t.partitions.size(); ++pi) {
            const auto& p = t.partitions[pi];
            auto& err = out.topics[ti].partitions[pi].error;
            if (p.metadata &&
                p.metadata->size() > static_cast<std::size_t>(cfg_.offset_metadata_max_bytes)) {
                err = make_error_code(errc::offset_metadata_too_large);
                continue;
            }
            if (!info || p.partition.value < 0 || p.partition.value >= info->partitions) {
                err = make_error_code(errc::unknown_topic_or_partition);
                continue;
            }
            committed_offset c;
            c.committed = p.committed;
            c.leader_epoch = p.leader_epoch;
            c.metadata = p.metadata;
            c.commit_timestamp_ms = now;
            c.expire_timestamp_ms = req.retention_time_ms >= 0 ? now + req.retention_time_ms : -1;
            records.push_back(offset_record(group_id, t.topic.value, p.partition.value, c));
            applied.push_back({&t.topic.value, p.partition.value, std::move(c), &err});
        }
    }
    if (records.empty()) {
        return out;
    }
    if (auto w = append_locked(group_id, std::move(records)); !w) {
        for (auto& a : applied) {
            *a.error = w.error();
        }
        return out;
    }
    auto& e = groups_[group_id];
    for (auto& a : applied) {
        e.offsets[*a.topic][a.partition] = std::move(a.value);
    }
    commits_.fetch_add(applied.size(), std::memory_order_relaxed);
    arm_locked();
    return out;
}

std::vector<api::offset_fetch_result> group_coordinator::fetch_offsets_now(
    const std::vector<api::offset_fetch_request>& reqs) {
    std::vector<api::offset_fetch_result> out;
    std::lock_guard lock(mu_);
    const auto loading = check_loaded();
    for (const auto& req : reqs) {
        api::offset_fetch_result r;
        r.group_id = req.group_id;
        if (loading) {
            r.error = loading;
            out.push_back(std::move(r));
            continue;
        }
        if (req.group_id.value.empty()) {
            r.error = make_error_code(errc::invalid_group_id);
            out.push_back(std::move(r));
            continue;
        }
        group_entry* e = find_locked(req.group_id.value);
        if (e != nullptr && e->kind == group_kind::consumer && e->consumer &&
            (req.member_id || req.member_epoch >= 0)) {
            // compat: ConsumerGroup.validateOffsetFetch.
            consumer_member* m = e->consumer->member(req.member_id.value_or(""));
            if (m == nullptr) {
                r.error = make_error_code(errc::unknown_member_id);
            } else if (req.member_epoch != m->member_epoch) {
                r.error = make_error_code(errc::stale_member_epoch);
            }
            if (r.error) {
                out.push_back(std::move(r));
                continue;
            }
        }
        if (!req.topics) {
            if (e != nullptr) {
                for (const auto& [topic, parts] : e->offsets) {
                    api::fetched_offsets_topic ft;
                    ft.topic = topic_name(topic);
                    for (const auto& [p, c] : parts) {
                        if (req.require_stable && pending_txn_offsets_ &&
                            pending_txn_offsets_(req.group_id, ft.topic, partition_id(p))) {
                            ft.partitions.push_back(
                                {partition_id(p), offset(-1), -1, std::string(),
                                 make_error_code(errc::unstable_offset_commit)});
                            continue;
                        }
                        ft.partitions.push_back(
                            {partition_id(p), c.committed, c.leader_epoch, c.metadata, {}});
                    }
                    r.topics.push_back(std::move(ft));
                }
            }
            out.push_back(std::move(r));
            continue;
        }
        for (const auto& t : *req.topics) {
            api::fetched_offsets_topic ft;
            ft.topic = t.topic;
            const std::map<std::int32_t, committed_offset>* parts = nullptr;
            if (e != nullptr) {
                auto it = e->offsets.find(t.topic.value);
                if (it != e->offsets.end()) {
                    parts = &it->second;
                }
            }
            for (partition_id p : t.partitions) {
                api::fetched_offset fp;
                fp.partition = p;
                fp.metadata = std::string();
                if (req.require_stable && pending_txn_offsets_ &&
                    pending_txn_offsets_(req.group_id, t.topic, p)) {
                    fp.error = make_error_code(errc::unstable_offset_commit);
                    ft.partitions.push_back(std::move(fp));
                    continue;
                }
                if (parts != nullptr) {
                    if (auto it = parts->find(p.value); it != parts->end()) {
                        fp.committed = it->second.committed;
                        fp.leader_epoch = it->second.leader_epoch;
                        fp.metadata = it->second.metadata;
                    }
                }
                ft.partitions.push_back(std::move(fp));
            }
            r.topics.push_back(std::move(ft));
        }
        out.push_back(std::move(r));
    }
    return out;
}

api::offset_delete_result group_coordinator::delete_offsets_now(
    const sluice::group_id& group, const std::vector<api::topic_partition_list>& topics) {
    const std::string& group_id = group.value;
    std::lock_guard lock(mu_);
    api::offset_delete_result out;
    if (auto ec = check_loaded()) {
        out.error = ec;
        return out;
    }
    group_entry* e = find_locked(group_id);
    if (e == nullptr) {
        out.error = make_error_code(errc::group_id_not_found);
        return out;
    }
    std::function<bool(const std::string&)> subscribed;
    if (e->kind == group_kind::classic && e->classic) {
        const classic_group& g = *e->classic;
        if (g.in(classic_state::dead)) {
            out.error = make_error_code(errc::group_id_not_found);
            return out;
        }
        const bool uses_consumer_protocol =
            g.protocol_type() && *g.protocol_type() == consumer_protocol_type;
        if (!g.in(classic_state::empty) && !uses_consumer_protocol) {
            out.error = make_error_code(errc::non_empty_group);
            return out;
        }
        subscribed = [&g](const std::string& t) { return g.is_subscribed_to(t); };
    } else if (e->consumer) {
        const consumer_group& g = *e->consumer;
        subscribed = [&g](const std::string& t) { return g.is_subscribed_to(t); };
    } else {
        subscribed = [](const std::string&) { return false; };
    }
    std::vector<encoded_record> records;
    std::vector<std::pair<std::string, std::int32_t>> removed;
    for (const auto& t : topics) {
        api::commit_topic_result tr;
        tr.topic = t.topic;
        const std::string& topic = t.topic.value;
        const bool in_use = subscribed(topic);
        for (partition_id p : t.partitions) {
            api::commit_partition_result pr{p, {}};
            if (in_use) {
                pr.error = make_error_code(errc::group_subscribed_to_topic);
            } else if (auto it = e->offsets.find(topic);
                       it != e->offsets.end() && it->second.contains(p.value)) {
                records.push_back(offset_tombstone(group_id, topic, p.value));
                removed.emplace_back(topic, p.value);
            }
            tr.partitions.push_back(pr);
        }
        out.topics.push_back(std::move(tr));
    }
    if (records.empty()) {
        return out;
    }
    if (auto w = append_locked(group_id, std::move(records)); !w) {
        out.error = w.error();
        return out;
    }
    for (const auto& [topic, p] : removed) {
        auto it = e->offsets.find(topic);
        it->second.erase(p);
        if (it->second.empty()) {
            e->offsets.erase(it);
        }
    }
    group_log().info("group {}: deleted {} committed offsets", group_id, removed.size());
    return out;
}

std::vector<api::group_deletion> group_coordinator::delete_groups_now(
    const std::vector<sluice::group_id>& ids) {
    std::lock_guard lock(mu_);
    std::vector<api::group_deletion> out;
    const auto loading = check_loaded();
    for (const auto& group : ids) {
        const std::string& id = group.value;
        if (loading) {
            out.push_back({group, loading});
            continue;
        }
        group_entry* e = find_locked(id);
        if (e == nullptr || (e->kind == group_kind::classic && e->classic &&
                             e->classic->in(classic_state::dead))) {
            out.push_back({group, make_error_code(errc::group_id_not_found)});
            continue;
        }
        const bool empty = e->kind == group_kind::classic
                               ? (!e->classic || e->classic->in(classic_state::empty))
                               : (!e->consumer || e->consumer->empty());
        if (!empty) {
            out.push_back({group, make_error_code(errc::non_empty_group)});
            continue;
        }
        std::vector<encoded_record> records;
        for (const auto& [topic, parts] : e->offsets) {
            for (const auto& [p, _] : parts) {
                records.push_back(offset_tombstone(id, topic, p));
            }
        }
        records.push_back(group_tombstone(id));
        if (auto w = append_locked(id, std::move(records)); !w) {
            out.push_back({group, w.error()});
            continue;
        }
        timers_.cancel("join\x1f" + id);
        timers_.cancel("sync\x1f" + id);
        groups_.erase(id);
        group_log().info("group {} deleted", id);
        out.push_back({group, std::error_code{}});
    }
    return out;
}

std::error_code group_coordinator::validate_txn_commit(
    const sluice::group_id& group, const std::string& member_id,
    const std::optional<std::string>& group_instance_id, std::int32_t generation_id) {
    const std::string& group_id = group.value;
    std::lock_guard lock(mu_);
    if (auto ec = check_loaded()) {
        return ec;
    }
    if (group_id.empty()) {
        return make_error_code(errc::invalid_group_id);
    }
    api::offset_commit_request req;
    req.group_id = group;
    req.member_id = member_id;
    req.group_instance_id = group_instance_id;
    req.generation_id_or_member_epoch = generation_id;
    return validate_commit_locked(find_locked(group_id), req, true);
}

boost::asio::awaitable<std::error_code> group_coordinator::commit_txn_offsets(
    sluice::group_id group, std::vector<api::commit_topic> topics) {
    const std::string& group_id = group.value;
    {
        std::lock_guard lock(mu_);
        if (auto ec = check_loaded()) {
            co_return ec;
        }
        const std::int64_t now = wall();
        std::vector<encoded_record> records;
        for (const auto& t : topics) {
            for (const auto& p : t.partitions) {
                committed_offset c{p.committed, p.leader_epoch, p.metadata, now, -1};
                records.push_back(offset_record(group_id, t.topic.value, p.partition.value, c));
            }
        }
        if (auto w = append_locked(group_id, std::move(records)); !w) {
            co_return w.error();
        }
        auto& e = groups_[group_id];
        if (!e.classic && !e.consumer) {
            e.kind = group_kind::classic;
            e.classic = std::make_unique<classic_group>(group_id, now);
        }
        std::size_t n = 0;
        for (const auto& t : topics) {
            for (const auto& p : t.partitions) {
                e.offsets[t.topic.value][p.partition.value] = {p.committed, p.leader_epoch,
                                                               p.metadata, now, -1};
                ++n;
            }
        }
        commits_.fetch_add(n, std::memory_order_relaxed);
    }
    co_return co_await flush_group(std::move(group));
}

void group_coordinator::schedule_retention_locked() {
    if (cfg_.offsets_retention_check_interval_ms <= 0) {
        return;
    }
    timers_.schedule("retention", mono() + cfg_.offsets_retention_check_interval_ms,
                     [this] { expire_offsets_locked(); });
}

void group_coordinator::expire_offsets() {
    std::lock_guard lock(mu_);
    expire_offsets_locked();
}

void group_coordinator::expire_offsets_locked() {
    const std::int64_t now = wall();
    const std::int64_t retention = cfg_.offsets_retention_ms;
    std::vector<std::string> ids;
    for (const auto& [id, _] : groups_) {
        ids.push_back(id);
    }
    std::size_t expired_total = 0;
    for (const auto& id : ids) {
        group_entry& e = groups_.at(id);
        // compat: the groups' offsetExpirationCondition and isSubscribedToTopic.
        std::function<std::optional<std::int64_t>(const committed_offset&)> base;
        std::function<bool(const std::string&)> subscribed;
        bool group_empty = false;
        if (e.kind == group_kind::classic) {
            const classic_group* g = e.classic.get();
            group_empty = g == nullptr || g->in(classic_state::empty);
            if (g == nullptr || !g->protocol_type()) {
                base = [](const committed_offset& c) { return c.commit_timestamp_ms; };
            } else if (g->in(classic_state::empty)) {
                const std::int64_t since = g->state_timestamp_ms();
                base = [since](const committed_offset&) { return since; };
            } else if (*g->protocol_type() == consumer_protocol_type && g->subscribed_topics() &&
                       g->in(classic_state::stable)) {
                base = [](const committed_offset& c) { return c.commit_timestamp_ms; };
            }
            subscribed = [g](const std::string& t) { return g != nullptr && g->is_subscribed_to(t); };
        } else {
            const consumer_group* g = e.consumer.get();
            group_empty = g == nullptr || g->empty();
            base = [](const committed_offset& c) { return c.commit_timestamp_ms; };
            subscribed = [g](const std::string& t) { return g != nullptr && g->is_subscribed_to(t); };
        }
        if (!base) {
            continue;
        }
        std::vector<encoded_record> records;
        std::vector<std::pair<std::string, std::int32_t>> gone;
        bool all_expired = true;
        for (const auto& [topic, parts] : e.offsets) {
            if (subscribed(topic)) {
                all_expired = false;
                continue;
            }
            for (const auto& [p, c] : parts) {
                auto b = base(c);
                if (b && expired(c, *b, now, retention)) {
                    records.push_back(offset_tombstone(id, topic, p));
                    gone.emplace_back(topic, p);
                } else {
                    all_expired = false;
                }
            }
        }
        const bool drop_group = all_expired && group_empty;
        if (drop_group) {
            records.push_back(group_tombstone(id));
        }
        if (records.empty()) {
            continue;
        }
        if (auto w = append_locked(id, std::move(records)); !w) {
            continue;
        }
        for (const auto& [topic, p] : gone) {
            auto it = e.offsets.find(topic);
            it->second.erase(p);
            if (it->second.empty()) {
                e.offsets.erase(it);
            }
        }
        expired_total += gone.size();
        if (drop_group) {
            if (e.kind == group_kind::consumer) {
                cancel_consumer_timers_locked(id);
            }
            timers_.cancel("join\x1f" + id);
            timers_.cancel("sync\x1f" + id);
            groups_.erase(id);
        }
    }
    if (expired_total > 0) {
        group_log().info("expired {} committed offsets (offsets.retention.minutes)",
                         expired_total);
    }
    schedule_retention_locked();
    arm_locked();
}

}  // namespace sluice::backend::group
