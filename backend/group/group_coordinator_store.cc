// group_coordinator: the __consumer_offsets topic (creation, appends, replay at start).
#include <functional>

#include "backend/group/errc.h"
#include "backend/group/group_coordinator.h"
#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "backend/logger.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch_builder.h"

namespace sluice::backend::group {
namespace kafka = protocol::kafka;

namespace {

/// Decompressed size allowed per batch at replay (our batches are never compressed).
constexpr std::size_t max_replay_batch_bytes = 64 << 20;

std::uint32_t partition_hash(const std::string& group_id) {
    // compat: Kafka maps a group to Utils.abs(groupId.hashCode()) % partitions; any stable
    // hash does here, but it must never change once the topic exists.
    std::uint32_t h = 0;
    for (unsigned char c : group_id) {
        h = 31 * h + c;
    }
    return h & 0x7fffffff;
}

}  // namespace

std::shared_ptr<log::partition_log> group_coordinator::offsets_partition(
    const std::string& group_id, bool create) {
    auto info = log_.find_topic(offsets_topic_name);
    if (!info && create) {
        auto made = log_.create_internal_topic(
            offsets_topic_name, std::max(cfg_.offsets_topic_partitions, 1),
            {{"cleanup.policy", "compact"},
             {"segment.bytes", std::to_string(cfg_.offsets_topic_segment_bytes)}});
        if (!made) {
            group_log().error("cannot create {}: {}", offsets_topic_name, made.error().message());
            return nullptr;
        }
        group_log().info("created internal topic {} with {} partitions", offsets_topic_name,
                         made->partitions);
        info = *made;
    }
    if (!info || info->partitions < 1) {
        return nullptr;
    }
    // The topic's own partition count, not the setting: the mapping must not change.
    const auto p = static_cast<std::int32_t>(partition_hash(group_id) %
                                             static_cast<std::uint32_t>(info->partitions));
    return log_.partition(offsets_topic_name, partition_id(p));
}

result<void> group_coordinator::append_locked(const std::string& group_id,
                                              std::vector<encoded_record> records) {
    if (records.empty()) {
        return {};
    }
    auto part = offsets_partition(group_id, true);
    if (!part) {
        return fail(errc::coordinator_unavailable);
    }
    const std::int64_t now = wall();
    kafka::record_batch_builder builder;
    for (const auto& r : records) {
        std::optional<protocol::bytes_view> value;
        if (r.value) {
            value = protocol::bytes_view(r.value->data(), r.value->size());
        }
        builder.add(protocol::bytes_view(r.key.data(), r.key.size()), value, now);
    }
    auto batch = builder.finish();
    if (!batch) {
        return fail(errc::record_too_large);
    }
    log::append_options opts;
    opts.now_ms = now;
    auto appended = part->append(batch->mutable_view(), opts);
    if (!appended) {
        group_log().warn("group {}: appending {} records to {} failed: {}", group_id,
                         records.size(), offsets_topic_name, appended.error().message());
        if (appended.error() == log::errc::message_too_large) {
            return fail(errc::record_too_large);
        }
        return fail(errc::storage_error);
    }
    return {};
}

void group_coordinator::store_group_locked(const std::string& group_id) {
    auto* e = find_locked(group_id);
    if (e == nullptr) {
        return;
    }
    stored_group g;
    if (e->kind == group_kind::classic && e->classic) {
        g = e->classic->to_stored();
    } else if (e->consumer) {
        g.kind = group_kind::consumer;
        g.group_epoch = e->consumer->group_epoch();
        g.state_timestamp_ms = e->consumer->state_since_ms();
    } else {
        return;
    }
    std::vector<encoded_record> recs;
    recs.push_back(group_record(group_id, g));
    if (auto r = append_locked(group_id, std::move(recs)); !r) {
        group_log().warn("group {}: state not persisted: {}", group_id, r.error().message());
    }
}

void group_coordinator::apply_record(std::map<std::string, group_entry>& groups,
                                     const record_key& key,
                                     std::optional<protocol::bytes_view> value) {
    if (const auto* k = std::get_if<offset_key>(&key)) {
        if (!value) {
            auto it = groups.find(k->group);
            if (it != groups.end()) {
                auto t = it->second.offsets.find(k->topic);
                if (t != it->second.offsets.end()) {
                    t->second.erase(k->partition);
                    if (t->second.empty()) {
                        it->second.offsets.erase(t);
                    }
                }
            }
            return;
        }
        auto v = decode_offset_value(*value);
        if (!v) {
            group_log().warn("skipping an undecodable offset record of group {}", k->group);
            return;
        }
        auto& e = groups[k->group];
        if (!e.classic && !e.consumer) {
            // A "simple" group that only commits offsets.
            e.kind = group_kind::classic;
            e.classic = std::make_unique<classic_group>(k->group, wall());
        }
        e.offsets[k->topic][k->partition] = std::move(*v);
        return;
    }
    const auto& gk = std::get<group_key>(key);
    if (!value) {
        auto it = groups.find(gk.group);
        if (it != groups.end()) {
            it->second.classic.reset();
            it->second.consumer.reset();
            if (it->second.offsets.empty()) {
                groups.erase(it);
            } else {
                it->second.kind = group_kind::classic;
                it->second.classic = std::make_unique<classic_group>(gk.group, wall());
            }
        }
        return;
    }
    auto v = decode_group_value(*value);
    if (!v) {
        group_log().warn("skipping an undecodable state record of group {}", gk.group);
        return;
    }
    auto& e = groups[gk.group];
    e.kind = v->kind;
    if (v->kind == group_kind::classic) {
        e.consumer.reset();
        e.classic = std::make_unique<classic_group>(classic_group::from_stored(gk.group, *v, wall()));
    } else {
        e.classic.reset();
        e.consumer = std::make_unique<consumer_group>(gk.group, v->state_timestamp_ms);
        e.consumer->set_group_epoch(v->group_epoch);
    }
}

void group_coordinator::load() {
    if (loaded()) {
        return;
    }
    const auto started = mono();
    std::size_t records = 0;
    // Replay into a private map without the mutex: calls made meanwhile are answered at once
    // with coordinator_loading instead of waiting for the lock.
    std::map<std::string, group_entry> replayed;
    if (log_.find_topic(offsets_topic_name)) {
        for (const auto& part : log_.partitions(offsets_topic_name)) {
            auto done = part->replay(part->log_start_offset(), [&](protocol::bytes_view batch) {
                auto decoded = kafka::decode_batch(batch, max_replay_batch_bytes);
                if (!decoded) {
                    group_log().warn("{}-{}: skipping an undecodable batch: {}",
                                     offsets_topic_name, part->partition().value,
                                     decoded.error().message());
                    return true;
                }
                if (decoded->header.attributes & kafka::batch_attr::control) {
                    return true;
                }
                for (const auto& rec : decoded->records) {
                    if (!rec.key) {
                        continue;
                    }
                    auto key = decode_key(*rec.key);
                    if (!key) {
                        group_log().warn("{}: skipping a record with an unknown key",
                                         offsets_topic_name);
                        continue;
                    }
                    apply_record(replayed, *key, rec.value);
                    ++records;
                }
                return true;
            });
            if (!done) {
                group_log().error("{}-{}: replay failed: {}", offsets_topic_name,
                                  part->partition().value, done.error().message());
            }
        }
    }
    std::size_t groups = 0;
    {
        std::lock_guard lock(mu_);
        groups_ = std::move(replayed);
        // Members restored from the log must heartbeat within their session timeout.
        for (auto& [id, e] : groups_) {
            if (e.classic) {
                for (auto& [mid, m] : e.classic->members()) {
                    reschedule_heartbeat_locked(*e.classic, m, m.session_timeout_ms);
                }
            }
        }
        schedule_retention_locked();
        arm_locked();
        groups = groups_.size();
        loaded_.store(true, std::memory_order_release);
    }
    group_log().info("group coordinator loaded {} groups from {} records of {} in {} ms",
                     groups, records, offsets_topic_name, mono() - started);
}

}  // namespace sluice::backend::group
