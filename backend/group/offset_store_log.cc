// offset_store: the __consumer_offsets topic (creation, the group -> partition mapping,
// appends, flushes, and the replay at start).
#include "backend/group/consumer_records.h"
#include "backend/group/errc.h"
#include "backend/group/offset_store.h"
#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "backend/logger.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch_builder.h"

#include <set>
#include <type_traits>

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

/// The state of the replay of __consumer_offsets.
struct replay_state {
    replayed_groups groups;
    /// KIP-848 members that have a metadata record (the others are dropped at the end).
    std::map<std::string, std::set<std::string>> described;
    /// The keys of legacy records, by group, and whether the latest record of each holds a
    /// value (those are rewritten once the replay is done).
    std::map<std::string, std::map<std::vector<std::byte>, bool>> legacy_keys;
    std::int64_t now = 0;
};

group_entry& entry_of(replay_state& st, const std::string& id) {
    auto& e = st.groups[id];
    if (!e) {
        e = std::make_shared<group_entry>(id);
    }
    return *e;
}

group_entry* find_entry(replay_state& st, const std::string& id) {
    auto it = st.groups.find(id);
    return it == st.groups.end() ? nullptr : it->second.get();
}

/// After a group's state was removed: the entry goes, or stays a "simple" group that only
/// holds offsets.
void drop_group_state(replay_state& st, group_entry& e) {
    e.classic.reset();
    e.consumer.reset();
    st.described.erase(e.id);
    e.kind = group_kind::classic;
    if (e.offsets.empty()) {
        const std::string id = e.id;
        st.groups.erase(id);  // `e` dies here
        return;
    }
    e.classic = std::make_unique<classic_group>(e.id, st.now);
}

/// The KIP-848 group a record of types 3-8 is about: created when the group is not one yet
/// (the latest record wins, as in Kafka's replay).
consumer_group& consumer_of(replay_state& st, const std::string& id, std::int64_t ts) {
    group_entry& e = entry_of(st, id);
    if (e.kind != group_kind::consumer || !e.consumer) {
        e.classic.reset();
        e.kind = group_kind::consumer;
        e.consumer = std::make_unique<consumer_group>(id, ts);
    }
    return *e.consumer;
}

consumer_group* existing_consumer(replay_state& st, const std::string& id) {
    group_entry* e = find_entry(st, id);
    return e != nullptr && e->kind == group_kind::consumer ? e->consumer.get() : nullptr;
}

void apply_offset(replay_state& st, const offset_key& k, bool legacy,
                  std::optional<protocol::bytes_view> value) {
    if (!value) {
        if (group_entry* e = find_entry(st, k.group); e != nullptr) {
            auto& offsets = e->offsets;
            if (auto t = offsets.find(k.topic); t != offsets.end()) {
                t->second.erase(k.partition);
                if (t->second.empty()) {
                    offsets.erase(t);
                }
            }
            if (e->vacant()) {
                st.groups.erase(k.group);
            }
        }
        return;
    }
    auto v = decode_offset_value(*value, legacy);
    if (!v) {
        group_log().warn("skipping an undecodable offset record of group {}", k.group);
        return;
    }
    auto& e = entry_of(st, k.group);
    if (!e.classic && !e.consumer) {
        // A "simple" group that only commits offsets.
        e.kind = group_kind::classic;
        e.classic = std::make_unique<classic_group>(k.group, st.now);
    }
    e.offsets[k.topic][k.partition] = std::move(*v);
}

void apply_classic(replay_state& st, const std::string& group, const stored_group& v) {
    auto& e = entry_of(st, group);
    e.kind = group_kind::classic;
    e.consumer.reset();
    st.described.erase(group);
    e.classic = std::make_unique<classic_group>(classic_group::from_stored(group, v, st.now));
}

void apply_group(replay_state& st, const group_key& k, bool legacy,
                 std::optional<protocol::bytes_view> value) {
    if (!value) {
        group_entry* e = find_entry(st, k.group);
        // A legacy tombstone removed either kind; Kafka's removes the classic group.
        if (e != nullptr && (legacy || e->kind == group_kind::classic)) {
            drop_group_state(st, *e);
        }
        return;
    }
    if (!legacy) {
        auto v = decode_group_value(*value);
        if (!v) {
            group_log().warn("skipping an undecodable state record of group {}", k.group);
            return;
        }
        apply_classic(st, k.group, *v);
        return;
    }
    auto v = decode_legacy_group_value(*value);
    if (!v) {
        group_log().warn("skipping an undecodable state record of group {}", k.group);
        return;
    }
    if (!v->consumer) {
        apply_classic(st, k.group, v->classic);
        return;
    }
    // The legacy layout kept a KIP-848 group's epoch only: its members rejoin.
    consumer_group& g = consumer_of(st, k.group, v->state_timestamp_ms);
    g.set_group_epoch(v->group_epoch);
    g.touch_state(v->state_timestamp_ms);
}

void apply_consumer_group(replay_state& st, const consumer_group_key& k,
                          std::optional<protocol::bytes_view> value, std::int64_t ts) {
    if (!value) {
        consumer_group* g = existing_consumer(st, k.group);
        if (g == nullptr) {
            return;
        }
        if (k.type == record_type::consumer_group_metadata) {
            drop_group_state(st, *find_entry(st, k.group));
        } else if (k.type == record_type::consumer_group_partition_metadata) {
            g->set_subscription_metadata({});
        }
        return;
    }
    if (k.type == record_type::consumer_group_partition_metadata) {
        auto v = decode_partition_metadata_value(*value);
        if (!v) {
            group_log().warn("skipping an undecodable subscription record of group {}", k.group);
            return;
        }
        consumer_of(st, k.group, ts).set_subscription_metadata(std::move(*v));
        return;
    }
    auto v = decode_epoch_value(*value);
    if (!v) {
        group_log().warn("skipping an undecodable epoch record of group {}", k.group);
        return;
    }
    consumer_group& g = consumer_of(st, k.group, ts);
    if (k.type == record_type::consumer_group_metadata) {
        g.set_group_epoch(*v);
        g.touch_state(ts);  // the record of the last epoch change: when the state changed
    } else {
        g.set_assignment_epoch(*v);
    }
}

void apply_consumer_member(replay_state& st, const consumer_member_key& k,
                           std::optional<protocol::bytes_view> value, std::int64_t ts) {
    if (!value) {
        consumer_group* g = existing_consumer(st, k.group);
        if (g == nullptr) {
            return;
        }
        if (k.type == record_type::consumer_group_member_metadata) {
            g->remove(k.member_id);
            st.described[k.group].erase(k.member_id);
        } else if (k.type == record_type::consumer_group_target_assignment_member) {
            g->erase_target_of(k.member_id);
        }
        return;
    }
    bool ok = false;
    switch (k.type) {
        case record_type::consumer_group_member_metadata:
            if (auto v = decode_member_metadata_value(*value)) {
                apply_member_metadata(consumer_of(st, k.group, ts), k.member_id, *v);
                st.described[k.group].insert(k.member_id);
                ok = true;
            }
            break;
        case record_type::consumer_group_target_assignment_member:
            if (auto v = decode_target_assignment_value(*value)) {
                consumer_of(st, k.group, ts).set_target_of(k.member_id, std::move(*v));
                ok = true;
            }
            break;
        default:
            if (auto v = decode_member_assignment_value(*value)) {
                apply_member_assignment(consumer_of(st, k.group, ts), k.member_id, *v);
                ok = true;
            }
            break;
    }
    if (!ok) {
        group_log().warn("skipping an undecodable record of member {} of group {}", k.member_id,
                         k.group);
    }
}

/// Applies one record of __consumer_offsets to the groups being replayed.
void apply_record(replay_state& st, const decoded_key& key,
                  std::optional<protocol::bytes_view> value, std::int64_t ts) {
    std::visit(
        [&](const auto& k) {
            using key_type = std::decay_t<decltype(k)>;
            if constexpr (std::is_same_v<key_type, offset_key>) {
                apply_offset(st, k, key.legacy, value);
            } else if constexpr (std::is_same_v<key_type, group_key>) {
                apply_group(st, k, key.legacy, value);
            } else if constexpr (std::is_same_v<key_type, consumer_group_key>) {
                apply_consumer_group(st, k, value, ts);
            } else {
                apply_consumer_member(st, k, value, ts);
            }
        },
        key.key);
}

/// The end of the replay: KIP-848 members without a metadata record (their records were
/// cut by a crash or compaction) and targets of members that are gone are dropped.
void finish_replay(replay_state& st) {
    for (auto& [id, e] : st.groups) {
        if (e->kind != group_kind::consumer || !e->consumer) {
            continue;
        }
        consumer_group& g = *e->consumer;
        const auto& described = st.described[id];
        std::vector<std::string> gone;
        for (const auto& [mid, _] : g.members()) {
            if (!described.contains(mid)) {
                gone.push_back(mid);
            }
        }
        for (const auto& mid : gone) {
            group_log().warn("group {}: member {} has no metadata record: dropped", id, mid);
            g.remove(mid);
        }
        gone.clear();
        for (const auto& [mid, _] : g.target_assignment()) {
            if (!g.members().contains(mid)) {
                gone.push_back(mid);
            }
        }
        for (const auto& mid : gone) {
            g.erase_target_of(mid);
        }
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
    if (e.kind != group_kind::classic || !e.classic) {
        return;
    }
    std::vector<encoded_record> recs;
    recs.push_back(group_record(e.id, e.classic->to_stored()));
    if (auto r = append(e.id, std::move(recs)); !r) {
        group_log().warn("group {}: state not persisted: {}", e.id, r.error().message());
    }
}

void offset_store::store_consumer(group_entry& e, std::vector<encoded_record> records) {
    if (e.kind != group_kind::consumer || !e.consumer) {
        return;
    }
    consumer_group& g = *e.consumer;
    if (g.needs_full_write()) {
        // `records` may hold tombstones of members gone since; the snapshot has the rest.
        auto all = consumer_group_snapshot(g);
        records.insert(records.end(), std::make_move_iterator(all.begin()),
                       std::make_move_iterator(all.end()));
    }
    if (records.empty()) {
        return;
    }
    if (auto r = append(e.id, std::move(records)); !r) {
        group_log().warn("group {}: state not persisted (the next change writes the whole "
                         "group): {}",
                         e.id, r.error().message());
        g.set_needs_full_write(true);
        return;
    }
    g.set_needs_full_write(false);
}

void offset_store::add_group_tombstones(const group_entry& e, std::vector<encoded_record>& out) {
    if (e.kind == group_kind::consumer && e.consumer) {
        auto all = consumer_group_tombstones(*e.consumer);
        out.insert(out.end(), std::make_move_iterator(all.begin()),
                   std::make_move_iterator(all.end()));
        return;
    }
    out.push_back(group_tombstone(e.id));
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
    replay_state st;
    if (!log_.find_topic(offsets_topic_name)) {
        return {};
    }
    st.now = wall();
    std::size_t unknown = 0;
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
                    ++unknown;
                    continue;
                }
                if (key->legacy) {
                    const std::string& group =
                        std::visit([](const auto& k) -> const std::string& { return k.group; },
                                   key->key);
                    st.legacy_keys[group][{rec.key->begin(), rec.key->end()}] =
                        rec.value.has_value();
                }
                apply_record(st, *key, rec.value, rec.timestamp);
                ++records;
            }
            return true;
        });
        if (!done) {
            group_log().error("{}-{}: replay failed: {}", offsets_topic_name,
                              part->partition().value, done.error().message());
        }
    }
    if (unknown > 0) {
        group_log().warn("{}: skipped {} records with a key type this version does not know",
                         offsets_topic_name, unknown);
    }
    finish_replay(st);
    // Legacy keys whose latest record is a tombstone need nothing more.
    std::map<std::string, std::vector<std::vector<std::byte>>> live;
    for (auto& [group, keys] : st.legacy_keys) {
        for (auto& [key, has_value] : keys) {
            if (has_value) {
                live[group].push_back(key);
            }
        }
    }
    if (!live.empty()) {
        rewrite_legacy(st.groups, live);
    }
    return std::move(st.groups);
}

void offset_store::rewrite_legacy(
    const std::map<std::string, std::shared_ptr<group_entry>>& groups,
    const std::map<std::string, std::vector<std::vector<std::byte>>>& keys) {
    std::size_t rewritten = 0;
    std::size_t failed = 0;
    for (const auto& [id, legacy] : keys) {
        // The tombstones first: replay applies them to the same offsets and group as the
        // records that follow, which then stand.
        std::vector<encoded_record> records;
        for (const auto& key : legacy) {
            records.push_back({key, std::nullopt});
        }
        if (auto it = groups.find(id); it != groups.end()) {
            const group_entry& e = *it->second;
            for (const auto& [topic, parts] : e.offsets) {
                for (const auto& [p, c] : parts) {
                    records.push_back(offset_record(id, topic, p, c));
                }
            }
            if (e.kind == group_kind::consumer && e.consumer) {
                auto all = consumer_group_snapshot(*e.consumer);
                records.insert(records.end(), std::make_move_iterator(all.begin()),
                               std::make_move_iterator(all.end()));
            } else if (e.classic && (e.classic->protocol_type() || e.classic->generation() > 0)) {
                records.push_back(group_record(id, e.classic->to_stored()));
            }
        }
        if (auto r = append(id, std::move(records)); !r) {
            // The legacy records stay and are read again at the next start.
            group_log().warn("group {}: rewriting its records in Kafka's layout failed: {}", id,
                             r.error().message());
            ++failed;
            continue;
        }
        ++rewritten;
    }
    group_log().info("{}: rewrote {} groups from sluice's earlier record layout into Kafka's"
                     " ({} failed)",
                     offsets_topic_name, rewritten, failed);
}

}  // namespace sluice::backend::group
