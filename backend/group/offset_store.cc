// offset_store: committed offsets (OffsetCommit, OffsetFetch, OffsetDelete), group deletion
// and offset expiry. compat: the checks follow Kafka's OffsetMetadataManager and the groups'
// validateOffsetDelete and offsetExpirationCondition (3.9).
#include "backend/group/offset_store.h"

#include <functional>

#include "backend/group/consumer_protocol.h"
#include "backend/group/errc.h"
#include "backend/log/log_manager.h"
#include "backend/logger.h"

namespace sluice::backend::group {

namespace {

/// compat: OffsetExpirationConditionImpl.isOffsetExpired.
bool expired(const committed_offset& c, std::int64_t base_ms, std::int64_t now_ms,
             std::int64_t retention_ms) {
    if (c.expire_timestamp_ms >= 0) {
        return now_ms >= c.expire_timestamp_ms;
    }
    return now_ms - base_ms >= retention_ms;
}

/// Whether the group consumes `topic` (classic: from its members' subscriptions; consumer:
/// from its subscription metadata).
bool subscribed(const group_entry& e, const std::string& topic) {
    if (e.kind == group_kind::classic) {
        return e.classic && e.classic->is_subscribed_to(topic);
    }
    return e.consumer && e.consumer->is_subscribed_to(topic);
}

void erase_offset(group_offsets& offsets, const std::string& topic, std::int32_t partition) {
    auto it = offsets.find(topic);
    if (it == offsets.end()) {
        return;
    }
    it->second.erase(partition);
    if (it->second.empty()) {
        offsets.erase(it);
    }
}

}  // namespace

offset_store::offset_store(log::log_manager& log, const coordinator_config& cfg,
                           const coordinator_clock& clock)
    : log_(log), cfg_(cfg), clock_(clock) {}

api::offset_commit_result offset_store::commit(group_entry& e,
                                               const api::offset_commit_request& req) {
    api::offset_commit_result out;
    const std::int64_t now = wall();
    std::vector<encoded_record> records;
    struct pending {
        const std::string* topic;
        std::int32_t partition;
        committed_offset value;
    };
    std::vector<pending> applied;
    for (const auto& t : req.topics) {
        auto& tr = out.topics.emplace_back();
        tr.topic = t.topic;
        auto info = log_.find_topic(t.topic.value);
        for (const auto& p : t.partitions) {
            auto& pr = tr.partitions.emplace_back();
            pr.partition = p.partition;
            if (p.metadata && p.metadata->size() > metadata_limit()) {
                pr.error = make_error_code(errc::offset_metadata_too_large);
                continue;
            }
            if (!info || p.partition.value < 0 || p.partition.value >= info->partitions) {
                pr.error = make_error_code(errc::unknown_topic_or_partition);
                continue;
            }
            committed_offset c;
            c.committed = p.committed;
            c.leader_epoch = p.leader_epoch;
            c.metadata = p.metadata.value_or("");  // compat: Kafka's OffsetAndMetadata.NO_METADATA
            c.commit_timestamp_ms = now;
            c.expire_timestamp_ms = req.retention_time_ms >= 0 ? now + req.retention_time_ms : -1;
            records.push_back(offset_record(e.id, t.topic.value, p.partition.value, c));
            applied.push_back({&t.topic.value, p.partition.value, std::move(c)});
        }
    }
    if (records.empty()) {
        return out;
    }
    if (auto w = append(e.id, std::move(records)); !w) {
        for (auto& tr : out.topics) {
            for (auto& pr : tr.partitions) {
                if (!pr.error) {
                    pr.error = w.error();
                }
            }
        }
        return out;
    }
    for (auto& a : applied) {
        e.offsets[*a.topic][a.partition] = std::move(a.value);
    }
    commits_.fetch_add(applied.size(), std::memory_order_relaxed);
    return out;
}

std::error_code offset_store::commit_txn(group_entry& e,
                                         const std::vector<api::commit_topic>& topics) {
    const std::int64_t now = wall();
    std::vector<encoded_record> records;
    std::vector<committed_offset> values;
    for (const auto& t : topics) {
        for (const auto& p : t.partitions) {
            committed_offset c{p.committed, p.leader_epoch, p.metadata.value_or(""), now, -1};
            if (c.metadata->size() > max_record_metadata_bytes) {
                // TxnOffsetCommit refuses such metadata; a record cannot hold it.
                group_log().warn("group {}: {}-{}: transactional commit metadata of {} bytes "
                                 "dropped",
                                 e.id, t.topic.value, p.partition.value, c.metadata->size());
                c.metadata = "";
            }
            records.push_back(offset_record(e.id, t.topic.value, p.partition.value, c));
            values.push_back(std::move(c));
        }
    }
    if (auto w = append(e.id, std::move(records)); !w) {
        return w.error();
    }
    if (!e.classic && !e.consumer) {
        // A "simple" group that only commits offsets.
        e.kind = group_kind::classic;
        e.classic = std::make_unique<classic_group>(e.id, now);
    }
    std::size_t n = 0;
    for (const auto& t : topics) {
        for (const auto& p : t.partitions) {
            e.offsets[t.topic.value][p.partition.value] = std::move(values[n]);
            ++n;
        }
    }
    commits_.fetch_add(n, std::memory_order_relaxed);
    return {};
}

api::offset_fetch_result offset_store::fetch(const group_entry* e,
                                             const api::offset_fetch_request& req) {
    api::offset_fetch_result r;
    r.group_id = req.group_id;
    if (!req.topics) {
        if (e != nullptr) {
            for (const auto& [topic, parts] : e->offsets) {
                auto& ft = r.topics.emplace_back();
                ft.topic = topic_name(topic);
                for (const auto& [p, c] : parts) {
                    ft.partitions.push_back(
                        {partition_id(p), c.committed, c.leader_epoch, c.metadata, {}});
                }
            }
        }
        return r;
    }
    for (const auto& t : *req.topics) {
        auto& ft = r.topics.emplace_back();
        ft.topic = t.topic;
        const std::map<std::int32_t, committed_offset>* parts = nullptr;
        if (e != nullptr) {
            if (auto it = e->offsets.find(t.topic.value); it != e->offsets.end()) {
                parts = &it->second;
            }
        }
        for (partition_id p : t.partitions) {
            api::fetched_offset fp;
            fp.partition = p;
            fp.metadata = std::string();
            if (parts != nullptr) {
                if (auto it = parts->find(p.value); it != parts->end()) {
                    fp.committed = it->second.committed;
                    fp.leader_epoch = it->second.leader_epoch;
                    fp.metadata = it->second.metadata;
                }
            }
            ft.partitions.push_back(std::move(fp));
        }
    }
    return r;
}

api::offset_delete_result offset_store::delete_offsets(
    group_entry& e, const std::vector<api::topic_partition_list>& topics) {
    api::offset_delete_result out;
    if (e.kind == group_kind::classic && e.classic) {
        const classic_group& g = *e.classic;
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
    }
    std::vector<encoded_record> records;
    std::vector<std::pair<std::string, std::int32_t>> removed;
    for (const auto& t : topics) {
        auto& tr = out.topics.emplace_back();
        tr.topic = t.topic;
        const std::string& topic = t.topic.value;
        const bool in_use = subscribed(e, topic);
        for (partition_id p : t.partitions) {
            api::commit_partition_result pr{p, {}};
            if (in_use) {
                pr.error = make_error_code(errc::group_subscribed_to_topic);
            } else if (auto it = e.offsets.find(topic);
                       it != e.offsets.end() && it->second.contains(p.value)) {
                records.push_back(offset_tombstone(e.id, topic, p.value));
                removed.emplace_back(topic, p.value);
            }
            tr.partitions.push_back(pr);
        }
    }
    if (records.empty()) {
        return out;
    }
    if (auto w = append(e.id, std::move(records)); !w) {
        out.error = w.error();
        return out;
    }
    for (const auto& [topic, p] : removed) {
        erase_offset(e.offsets, topic, p);
    }
    group_log().info("group {}: deleted {} committed offsets", e.id, removed.size());
    return out;
}

std::error_code offset_store::delete_group(group_entry& e) {
    if ((!e.classic && !e.consumer) ||
        (e.kind == group_kind::classic && e.classic && e.classic->in(classic_state::dead))) {
        return make_error_code(errc::group_id_not_found);
    }
    const bool empty = e.kind == group_kind::classic
                           ? (!e.classic || e.classic->in(classic_state::empty))
                           : (!e.consumer || e.consumer->empty());
    if (!empty) {
        return make_error_code(errc::non_empty_group);
    }
    std::vector<encoded_record> records;
    for (const auto& [topic, parts] : e.offsets) {
        for (const auto& [p, _] : parts) {
            records.push_back(offset_tombstone(e.id, topic, p));
        }
    }
    add_group_tombstones(e, records);
    if (auto w = append(e.id, std::move(records)); !w) {
        return w.error();
    }
    e.clear();
    group_log().info("group {} deleted", e.id);
    return {};
}

std::size_t offset_store::expire(group_entry& e) {
    const std::int64_t now = wall();
    // compat: the groups' offsetExpirationCondition: from when each offset is measured.
    std::function<std::optional<std::int64_t>(const committed_offset&)> base;
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
    } else {
        group_empty = e.consumer == nullptr || e.consumer->empty();
        base = [](const committed_offset& c) { return c.commit_timestamp_ms; };
    }
    if (!base) {
        return 0;
    }
    std::vector<encoded_record> records;
    std::vector<std::pair<std::string, std::int32_t>> gone;
    bool all_expired = true;
    for (const auto& [topic, parts] : e.offsets) {
        if (subscribed(e, topic)) {
            all_expired = false;
            continue;
        }
        for (const auto& [p, c] : parts) {
            auto b = base(c);
            if (b && expired(c, *b, now, cfg_.offsets_retention_ms)) {
                records.push_back(offset_tombstone(e.id, topic, p));
                gone.emplace_back(topic, p);
            } else {
                all_expired = false;
            }
        }
    }
    const bool drop_group = all_expired && group_empty;
    if (drop_group) {
        add_group_tombstones(e, records);
    }
    if (records.empty()) {
        return 0;
    }
    if (auto w = append(e.id, std::move(records)); !w) {
        return 0;
    }
    for (const auto& [topic, p] : gone) {
        erase_offset(e.offsets, topic, p);
    }
    if (drop_group) {
        e.clear();
    }
    return gone.size();
}

}  // namespace sluice::backend::group
