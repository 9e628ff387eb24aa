// offset_store: the __consumer_offsets topic (creation, the group -> partition mapping,
// appends, flushes, and the replay at start).
#include "backend/group/errc.h"
#include "backend/group/offset_store.h"
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

using replayed_groups = std::map<std::string, std::shared_ptr<group_entry>>;

group_entry& entry_of(replayed_groups& groups, const std::string& id) {
    auto& e = groups[id];
    if (!e) {
        e = std::make_shared<group_entry>(id);
    }
    return *e;
}

/// Applies one record of __consumer_offsets to the groups being replayed.
void apply_record(replayed_groups& groups, const record_key& key,
                  std::optional<protocol::bytes_view> value, std::int64_t now) {
    if (const auto* k = std::get_if<offset_key>(&key)) {
        if (!value) {
            if (auto it = groups.find(k->group); it != groups.end()) {
                auto& offsets = it->second->offsets;
                if (auto t = offsets.find(k->topic); t != offsets.end()) {
                    t->second.erase(k->partition);
                    if (t->second.empty()) {
                        offsets.erase(t);
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
        auto& e = entry_of(groups, k->group);
        if (!e.classic && !e.consumer) {
            // A "simple" group that only commits offsets.
            e.kind = group_kind::classic;
            e.classic = std::make_unique<classic_group>(k->group, now);
        }
        e.offsets[k->topic][k->partition] = std::move(*v);
        return;
    }
    const auto& gk = std::get<group_key>(key);
    if (!value) {
        if (auto it = groups.find(gk.group); it != groups.end()) {
            group_entry& e = *it->second;
            e.classic.reset();
            e.consumer.reset();
            if (e.offsets.empty()) {
                groups.erase(it);
            } else {
                e.kind = group_kind::classic;
                e.classic = std::make_unique<classic_group>(gk.group, now);
            }
        }
        return;
    }
    auto v = decode_group_value(*value);
    if (!v) {
        group_log().warn("skipping an undecodable state record of group {}", gk.group);
        return;
    }
    auto& e = entry_of(groups, gk.group);
    e.kind = v->kind;
    if (v->kind == group_kind::classic) {
        e.consumer.reset();
        e.classic = std::make_unique<classic_group>(classic_group::from_stored(gk.group, *v, now));
    } else {
        e.classic.reset();
        e.consumer = std::make_unique<consumer_group>(gk.group, v->state_timestamp_ms);
        e.consumer->set_group_epoch(v->group_epoch);
    }
}

}  // namespace

std::shared_ptr<log::partition_log> offset_store::partition_of(const std::string& group_id,
                                                               bool create) {
    auto info = log_.find_topic(offsets_topic_name);
    if (!info && create) {
        auto made = log_.create_internal_topic(
            offsets_topic_name, std::max(cfg_.offsets_topic_partitions, 1),
            {{"cleanup.policy", "compact"},
             {"segment.bytes", std::to_string(cfg_.offsets_topic_segment_bytes)}});
        if (!made) {
            // Another group's first write may have created it meanwhile.
            info = log_.find_topic(offsets_topic_name);
            if (!info) {
                group_log().error("cannot create {}: {}", offsets_topic_name,
                                  made.error().message());
                return nullptr;
            }
        } else {
            group_log().info("created internal topic {} with {} partitions", offsets_topic_name,
                             made->partitions);
            info = *made;
        }
    }
    if (!info || info->partitions < 1) {
        return nullptr;
    }
    // The topic's own partition count, not the setting: the mapping must not change.
    const auto p = static_cast<std::int32_t>(partition_hash(group_id) %
                                             static_cast<std::uint32_t>(info->partitions));
    return log_.partition(offsets_topic_name, partition_id(p));
}

result<void> offset_store::append(const std::string& group_id,
                                  std::vector<encoded_record> records) {
    if (records.empty()) {
        return {};
    }
    auto part = partition_of(group_id, true);
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

void offset_store::store_group(group_entry& e) {
    stored_group g;
    if (e.kind == group_kind::classic && e.classic) {
        g = e.classic->to_stored();
    } else if (e.kind == group_kind::consumer && e.consumer) {
        g.kind = group_kind::consumer;
        g.group_epoch = e.consumer->group_epoch();
        g.state_timestamp_ms = e.consumer->state_since_ms();
    } else {
        return;
    }
    std::vector<encoded_record> recs;
    recs.push_back(group_record(e.id, g));
    if (auto r = append(e.id, std::move(recs)); !r) {
        group_log().warn("group {}: state not persisted: {}", e.id, r.error().message());
    }
}

boost::asio::awaitable<std::error_code> offset_store::flush(std::string group_id) {
    auto p = partition_of(group_id, false);
    if (!p) {
        co_return std::error_code{};
    }
    auto done = co_await p->flush_to(p->log_end_offset());
    if (!done) {
        group_log().warn("group {}: flushing the offsets log failed: {}", group_id,
                         done.error().message());
        co_return make_error_code(errc::storage_error);
    }
    co_return std::error_code{};
}

std::map<std::string, std::shared_ptr<group_entry>> offset_store::replay(std::size_t& records) {
    replayed_groups groups;
    if (!log_.find_topic(offsets_topic_name)) {
        return groups;
    }
    const std::int64_t now = wall();
    for (const auto& part : log_.partitions(offsets_topic_name)) {
        auto done = part->replay(part->log_start_offset(), [&](protocol::bytes_view batch) {
            auto decoded = kafka::decode_batch(batch, max_replay_batch_bytes);
            if (!decoded) {
                group_log().warn("{}-{}: skipping an undecodable batch: {}", offsets_topic_name,
                                 part->partition().value, decoded.error().message());
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
                apply_record(groups, *key, rec.value, now);
                ++records;
            }
            return true;
        });
        if (!done) {
            group_log().error("{}-{}: replay failed: {}", offsets_topic_name,
                              part->partition().value, done.error().message());
        }
    }
    return groups;
}

}  // namespace sluice::backend::group
