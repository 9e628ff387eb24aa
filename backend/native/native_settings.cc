#include "backend/native/native_settings.h"

#include <string>

#include "backend/group/assignor.h"
#include "backend/group/group_records.h"
#include "backend/log/topic_config.h"

namespace sluice::backend::native {
namespace {

using api::setting;
using api::setting_change;
using api::setting_type;
using api::setting_unit;

constexpr std::int64_t int_max = 2147483647;
constexpr auto integer = setting_type::integer;
constexpr auto ms = setting_unit::milliseconds;
constexpr auto bytes = setting_unit::bytes;

namespace key {
constexpr setting retention_check{
    .name = "log.retention.check.interval.ms", .type = integer, .default_value = "300000",
    .doc = "how often retention deletes old segments (0: never by itself)", .unit = ms,
    .min = 0, .range = "0 (never) or a positive number of ms"};
constexpr setting cleaner_backoff{
    .name = "log.cleaner.backoff.ms", .type = integer, .default_value = "15000",
    .doc = "how often compacted topics are checked for work (0: never by itself)", .unit = ms,
    .min = 0, .range = "0 (never) or a positive number of ms"};
constexpr setting recovery_progress{
    .name = "log.recovery.progress.interval.ms", .type = integer, .default_value = "5000",
    .doc = "while opening the data dir takes longer, how often it logs its progress "
           "(partitions and MiB done, MiB/s, time left); a summary line follows an unclean "
           "start or a long one (0: every partition)",
    .unit = ms, .min = 0, .range = "0 (never) or a positive number of ms"};

constexpr setting min_session{
    .name = "group.min.session.timeout.ms", .type = integer, .default_value = "6000",
    .doc = "the shortest JoinGroup session timeout accepted", .unit = ms, .min = 1,
    .max = int_max};
constexpr setting max_session{
    .name = "group.max.session.timeout.ms", .type = integer, .default_value = "1800000",
    .doc = "the longest JoinGroup session timeout accepted (at least the shortest)", .unit = ms,
    .min = 1, .max = int_max};
constexpr setting initial_rebalance{
    .name = "group.initial.rebalance.delay.ms", .type = integer, .default_value = "3000",
    .doc = "how long the first rebalance of an empty group waits for more members", .unit = ms,
    .min = 0, .max = int_max};
constexpr setting group_max_size{
    .name = "group.max.size", .type = integer, .default_value = "2147483647",
    .doc = "members per classic group", .min = 1, .max = int_max};
constexpr setting offsets_retention{
    .name = "offsets.retention.minutes", .type = integer, .default_value = "10080",
    .doc = "committed offsets of a group that has been empty this long are deleted",
    .unit = setting_unit::minutes, .min = 1, .max = int_max};
constexpr setting offsets_retention_check{
    .name = "offsets.retention.check.interval.ms", .type = integer, .default_value = "600000",
    .doc = "how often offset expiry runs", .unit = ms, .min = 1, .max = int_max};
constexpr setting offset_metadata{
    .name = "offset.metadata.max.bytes", .type = integer, .default_value = "4096",
    .doc = "longest commit metadata string, OffsetCommit and TxnOffsetCommit (at most 32767: "
           "what a record's string holds)",
    .unit = bytes, .min = 0,
    .max = static_cast<std::int64_t>(group::max_record_metadata_bytes)};
constexpr setting offsets_partitions{
    .name = "offsets.topic.num.partitions", .type = integer, .default_value = "1",
    .doc = "partitions of `__consumer_offsets` when it is created (fixed afterwards)", .min = 1,
    .max = 1000};
constexpr setting offsets_segment{
    .name = "offsets.topic.segment.bytes", .type = integer, .default_value = "104857600",
    .doc = "segment size of `__consumer_offsets`", .unit = bytes, .min = 1048576,
    .max = int_max};
constexpr setting consumer_heartbeat{
    .name = "group.consumer.heartbeat.interval.ms", .type = integer, .default_value = "5000",
    .doc = "KIP-848 heartbeat interval given to members", .unit = ms, .min = 1, .max = int_max};
constexpr setting consumer_session{
    .name = "group.consumer.session.timeout.ms", .type = integer, .default_value = "45000",
    .doc = "KIP-848 session timeout", .unit = ms, .min = 1, .max = int_max};
constexpr setting consumer_max_size{
    .name = "group.consumer.max.size", .type = integer, .default_value = "2147483647",
    .doc = "members per KIP-848 group", .min = 1, .max = int_max};
constexpr setting consumer_min_session{
    .name = "group.consumer.min.session.timeout.ms", .type = integer, .default_value = "45000",
    .doc = "lower bound of a group's own `consumer.session.timeout.ms`", .unit = ms, .min = 1,
    .max = int_max};
constexpr setting consumer_max_session{
    .name = "group.consumer.max.session.timeout.ms", .type = integer, .default_value = "60000",
    .doc = "upper bound of a group's own `consumer.session.timeout.ms`", .unit = ms, .min = 1,
    .max = int_max};
constexpr setting consumer_min_heartbeat{
    .name = "group.consumer.min.heartbeat.interval.ms", .type = integer, .default_value = "5000",
    .doc = "lower bound of a group's own `consumer.heartbeat.interval.ms`", .unit = ms, .min = 1,
    .max = int_max};
constexpr setting consumer_max_heartbeat{
    .name = "group.consumer.max.heartbeat.interval.ms", .type = integer,
    .default_value = "15000", .doc = "upper bound of a group's own `consumer.heartbeat.interval.ms`",
    .unit = ms, .min = 1, .max = int_max};
constexpr setting consumer_assignors{
    .name = "group.consumer.assignors", .type = setting_type::list, .default_value = "uniform,range",
    .doc = "server assignors offered (`uniform`, `range`); the first is the default"};

constexpr setting producer_expiration{
    .name = "producer.id.expiration.ms", .type = integer, .default_value = "86400000",
    .doc = "a producer id without writes for this long is forgotten", .unit = ms, .min = 1};
constexpr setting producer_expiration_check{
    .name = "producer.id.expiration.check.interval.ms", .type = integer,
    .default_value = "600000", .doc = "how often producer id expiry runs", .unit = ms, .min = 1};
constexpr setting producer_snapshot{
    .name = "producer.state.snapshot.interval.ms", .type = integer, .default_value = "60000",
    .doc = "how often changed producer states are written to their snapshots", .unit = ms,
    .min = 1};
constexpr setting txn_max_timeout{
    .name = "transaction.max.timeout.ms", .type = integer, .default_value = "900000",
    .doc = "the longest `transaction.timeout.ms` a producer may ask for", .unit = ms, .min = 1,
    .max = int_max};
constexpr setting txn_id_expiration{
    .name = "transactional.id.expiration.ms", .type = integer, .default_value = "604800000",
    .doc = "a transactional id unused this long is removed", .unit = ms, .min = 1,
    .max = int_max};
constexpr setting txn_abort_check{
    .name = "transaction.abort.timed.out.transaction.cleanup.interval.ms", .type = integer,
    .default_value = "10000",
    .doc = "how often timed-out transactions are aborted (checks run at least every second)",
    .unit = ms, .min = 1, .max = int_max};
constexpr setting txn_expiry_check{
    .name = "transaction.remove.expired.transaction.cleanup.interval.ms", .type = integer,
    .default_value = "3600000", .doc = "how often expired transactional ids are removed",
    .unit = ms, .min = 1, .max = int_max};
constexpr setting txn_partitions{
    .name = "transaction.state.log.num.partitions", .type = integer, .default_value = "1",
    .doc = "partitions of `__transaction_state` when it is created", .min = 1, .max = 1000};
constexpr setting txn_segment{
    .name = "transaction.state.log.segment.bytes", .type = integer, .default_value = "104857600",
    .doc = "segment size of `__transaction_state`", .unit = bytes, .min = 1, .max = int_max};
constexpr setting txn_version{
    .name = "transaction.version", .type = integer, .default_value = "2",
    .doc = "the finalized `transaction.version` feature level ApiVersions advertises", .min = 0,
    .max = 2, .range = "0, 1 or 2"};

constexpr setting queue_partitions{
    .name = "sqs.queue.partitions", .type = integer, .default_value = "1",
    .doc = "partitions of the topic CreateQueue creates; a FIFO queue's groups are spread over "
           "them by key",
    .min = 1, .max = 1000};
constexpr setting read_ahead_bytes{
    .name = "sqs.read.ahead.bytes", .type = integer, .default_value = "67108864",
    .doc = "record bytes each queue keeps read ahead of its receivers, per queue", .unit = bytes,
    .min = 1 << 20, .max = std::int64_t{1} << 40};
constexpr setting read_ahead_messages{
    .name = "sqs.read.ahead.messages", .type = integer, .default_value = "100000",
    .doc = "records each queue keeps read ahead, per queue", .min = 10, .max = 100000000};
constexpr setting max_inflight{
    .name = "sqs.max.inflight.messages", .type = integer, .default_value = "120000",
    .doc = "in-flight messages per queue (SQS's limit for standard queues); a receive beyond it "
           "is OverLimit",
    .min = 1, .max = 100000000};
constexpr setting name_reuse{
    .name = "sqs.deleted.name.reuse.ms", .type = integer, .default_value = "60000",
    .doc = "how long a deleted queue's name is refused (QueueDeletedRecently), as SQS's 60 s",
    .unit = ms, .min = 0, .max = 86400000};
constexpr setting purge_interval{
    .name = "sqs.purge.interval.ms", .type = integer, .default_value = "60000",
    .doc = "PurgeQueue of one queue at most once in this long (PurgeQueueInProgress)",
    .unit = ms, .min = 0, .max = 86400000};
constexpr setting state_segment{
    .name = "sqs.state.segment.bytes", .type = integer, .default_value = "67108864",
    .doc = "segment size of the compacted internal topic `__queue_state`", .unit = bytes,
    .min = 1 << 20, .max = std::int64_t{1} << 34};
}  // namespace key

constexpr setting log_settings[] = {key::retention_check, key::cleaner_backoff,
                                    key::recovery_progress};
constexpr setting group_settings[] = {
    key::min_session,          key::max_session,          key::initial_rebalance,
    key::group_max_size,       key::offsets_retention,    key::offsets_retention_check,
    key::offset_metadata,      key::offsets_partitions,   key::offsets_segment,
    key::consumer_heartbeat,   key::consumer_session,     key::consumer_min_session,
    key::consumer_max_session, key::consumer_min_heartbeat, key::consumer_max_heartbeat,
    key::consumer_max_size,    key::consumer_assignors,
};
constexpr setting transaction_settings[] = {
    key::producer_expiration, key::producer_expiration_check, key::producer_snapshot,
    key::txn_version,         key::txn_max_timeout,           key::txn_id_expiration,
    key::txn_abort_check,     key::txn_expiry_check,          key::txn_partitions,
    key::txn_segment,
};
constexpr setting queue_settings[] = {key::queue_partitions, key::read_ahead_bytes,
                                      key::read_ahead_messages, key::max_inflight,
                                      key::name_reuse, key::purge_interval, key::state_segment};

setting_type type_of(api::config_type t) {
    switch (t) {
        case api::config_type::boolean:
            return setting_type::boolean;
        case api::config_type::short_:
        case api::config_type::int_:
        case api::config_type::long_:
            return setting_type::integer;
        case api::config_type::double_:
            return setting_type::decimal;
        case api::config_type::list:
            return setting_type::list;
        case api::config_type::unknown:
        case api::config_type::string:
            break;
    }
    return setting_type::string;
}

/// The broker-level topic defaults (log.segment.bytes, log.retention.ms, ...): parsed by the
/// log itself (broker_defaults), changed while running by AlterConfigs.
std::vector<setting> topic_default_settings() {
    std::vector<setting> out;
    for (const auto& def : log::topic_config_defs()) {
        if (def.broker_key.empty()) {
            continue;
        }
        out.push_back(setting{.name = def.broker_key, .type = type_of(def.type),
                              .default_value = def.default_value, .doc = def.documentation,
                              .change = setting_change::live});
    }
    // Kafka's coarser synonyms, which a finer one wins over.
    constexpr setting coarse[] = {
        {.name = "log.retention.minutes", .type = integer,
         .doc = "`log.retention.ms` in minutes (when that is not set)",
         .unit = setting_unit::minutes, .change = setting_change::live},
        {.name = "log.retention.hours", .type = integer, .default_value = "168",
         .doc = "`log.retention.ms` in hours (when neither it nor the minutes are set)",
         .unit = setting_unit::hours, .change = setting_change::live},
        {.name = "log.roll.hours", .type = integer, .default_value = "168",
         .doc = "`log.roll.ms` in hours (when that is not set)", .unit = setting_unit::hours,
         .change = setting_change::live},
        {.name = "log.roll.jitter.hours", .type = integer, .default_value = "0",
         .doc = "`log.roll.jitter.ms` in hours (when that is not set)",
         .unit = setting_unit::hours, .change = setting_change::live},
    };
    out.insert(out.end(), std::begin(coarse), std::end(coarse));
    return out;
}

}  // namespace

const std::vector<api::setting_table>& native_setting_tables() {
    static const std::vector<setting> topic_defaults = topic_default_settings();
    static const std::vector<api::setting_table> tables = {
        {.module = "log", .title = "Log", .settings = log_settings},
        {.module = "log-defaults", .title = "Broker-level topic defaults",
         .settings = topic_defaults},
        {.module = "groups", .title = "Consumer groups", .settings = group_settings},
        {.module = "transactions", .title = "Producers and transactions",
         .settings = transaction_settings},
        {.module = "queues", .title = "SQS queues", .settings = queue_settings},
    };
    return tables;
}

native_options read_native_options(const api::setting_values& values,
                                   const std::filesystem::path& data_dir) {
    native_options o;
    o.log.data_dir = data_dir.string();
    std::string why;
    auto defaults = log::broker_defaults(values.properties(), &why);
    if (!defaults) {
        // "invalid value 'x' for log.segment.bytes: ..." names the setting itself.
        throw std::runtime_error(why.empty() ? defaults.error().message() : why);
    }
    o.log.defaults = *defaults;
    o.log.retention_check_interval = values.get_duration(key::retention_check);
    o.log.compaction_check_interval = values.get_duration(key::cleaner_backoff);
    o.log.recovery_progress_interval = values.get_duration(key::recovery_progress);
    o.properties = values.properties();

    auto& g = o.groups;
    auto i32 = [&](const setting& s) { return static_cast<std::int32_t>(values.get_int(s)); };
    g.min_session_timeout_ms = i32(key::min_session);
    g.max_session_timeout_ms = i32(key::max_session);
    if (g.max_session_timeout_ms < g.min_session_timeout_ms) {
        values.fail(key::max_session, "must be at least group.min.session.timeout.ms (" +
                                          std::to_string(g.min_session_timeout_ms) + ")");
    }
    g.initial_rebalance_delay_ms = i32(key::initial_rebalance);
    g.max_size = i32(key::group_max_size);
    g.offsets_retention_ms = values.get_duration(key::offsets_retention).count();
    g.offsets_retention_check_interval_ms = values.get_int(key::offsets_retention_check);
    g.offset_metadata_max_bytes = i32(key::offset_metadata);
    g.offsets_topic_partitions = i32(key::offsets_partitions);
    g.offsets_topic_segment_bytes = i32(key::offsets_segment);
    g.consumer_heartbeat_interval_ms = i32(key::consumer_heartbeat);
    g.consumer_session_timeout_ms = i32(key::consumer_session);
    g.consumer_max_size = i32(key::consumer_max_size);
    // The bounds of the groups' own configs (consumer.session.timeout.ms and
    // consumer.heartbeat.interval.ms on a GROUP resource).
    g.consumer_min_session_timeout_ms = i32(key::consumer_min_session);
    g.consumer_max_session_timeout_ms = i32(key::consumer_max_session);
    if (g.consumer_max_session_timeout_ms < g.consumer_min_session_timeout_ms) {
        values.fail(key::consumer_max_session,
                    "must be at least group.consumer.min.session.timeout.ms (" +
                        std::to_string(g.consumer_min_session_timeout_ms) + ")");
    }
    g.consumer_min_heartbeat_interval_ms = i32(key::consumer_min_heartbeat);
    g.consumer_max_heartbeat_interval_ms = i32(key::consumer_max_heartbeat);
    if (g.consumer_max_heartbeat_interval_ms < g.consumer_min_heartbeat_interval_ms) {
        values.fail(key::consumer_max_heartbeat,
                    "must be at least group.consumer.min.heartbeat.interval.ms (" +
                        std::to_string(g.consumer_min_heartbeat_interval_ms) + ")");
    }
    g.consumer_assignors.clear();
    for (auto& name : values.get_list(key::consumer_assignors)) {
        if (!group::known_assignor(name)) {
            values.fail(key::consumer_assignors,
                        "unknown assignor '" + name + "' (uniform, range)");
        }
        g.consumer_assignors.push_back(std::move(name));
    }
    if (g.consumer_assignors.empty()) {
        values.fail(key::consumer_assignors, "name at least one assignor");
    }

    auto& p = o.producers;
    p.producer_id_expiration_ms = values.get_int(key::producer_expiration);
    p.expiration_check_interval_ms = values.get_int(key::producer_expiration_check);
    p.snapshot_interval_ms = values.get_int(key::producer_snapshot);

    auto& t = o.transactions;
    t.max_timeout_ms = i32(key::txn_max_timeout);
    t.id_expiration_ms = values.get_int(key::txn_id_expiration);
    t.abort_check_interval_ms = values.get_int(key::txn_abort_check);
    t.expiry_check_interval_ms = values.get_int(key::txn_expiry_check);
    t.state_log_partitions = i32(key::txn_partitions);
    t.state_log_segment_bytes = i32(key::txn_segment);
    t.transaction_version = static_cast<std::int16_t>(values.get_int(key::txn_version));

    auto& q = o.queues;
    q.partitions = i32(key::queue_partitions);
    q.limits.read_ahead_bytes = static_cast<std::size_t>(values.get_int(key::read_ahead_bytes));
    q.limits.read_ahead_messages =
        static_cast<std::size_t>(values.get_int(key::read_ahead_messages));
    q.limits.max_in_flight = static_cast<std::size_t>(values.get_int(key::max_inflight));
    q.deleted_name_reuse_ms = values.get_int(key::name_reuse);
    q.purge_interval_ms = values.get_int(key::purge_interval);
    o.queue_state_segment_bytes = values.get_int(key::state_segment);
    return o;
}

}  // namespace sluice::backend::native
