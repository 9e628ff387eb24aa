#include "backend/log/topic_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "backend/log/errc.h"

namespace sluice::backend::log {
namespace {

constexpr std::int64_t long_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int_max = std::numeric_limits<std::int32_t>::max();

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// Each parser returns an empty string on success, or the reason the value is bad.
std::string parse_long(std::string_view text, std::int64_t min, std::int64_t max,
                       std::int64_t& out) {
    text = trim(text);
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) {
        return "not an integer";
    }
    if (v < min || v > max) {
        return "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    }
    out = v;
    return {};
}

std::string parse_int(std::string_view text, std::int64_t min, std::int32_t& out) {
    std::int64_t v = 0;
    auto err = parse_long(text, min, int_max, v);
    if (err.empty()) {
        out = static_cast<std::int32_t>(v);
    }
    return err;
}

std::string parse_bool(std::string_view text, bool& out) {
    auto v = lower(trim(text));
    if (v == "true") {
        out = true;
    } else if (v == "false") {
        out = false;
    } else {
        return "must be true or false";
    }
    return {};
}

std::string parse_ratio(std::string_view text, double& out) {
    std::string v(trim(text));
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(d)) {
        return "not a number";
    }
    if (d < 0.0 || d > 1.0) {
        return "must be in [0, 1]";
    }
    out = d;
    return {};
}

std::string parse_cleanup_policy(std::string_view text, topic_config& c) {
    bool del = false;
    bool compact = false;
    std::size_t items = 0;
    while (true) {
        auto comma = text.find(',');
        auto item = lower(trim(text.substr(0, comma)));
        if (item == "delete") {
            del = true;
        } else if (item == "compact") {
            compact = true;
        } else {
            return "each item must be delete or compact";
        }
        ++items;
        if (comma == std::string_view::npos) {
            break;
        }
        text.remove_prefix(comma + 1);
    }
    if (items == 0) {
        return "must not be empty";
    }
    c.cleanup_delete = del;
    c.cleanup_compact = compact;
    return {};
}

std::string print_cleanup_policy(const topic_config& c) {
    if (c.cleanup_compact && c.cleanup_delete) {
        return "compact,delete";
    }
    return c.cleanup_compact ? "compact" : "delete";
}

std::string print_ratio(double d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    std::string s(buf);
    if (s.find_first_of(".e") == std::string::npos) {
        s += ".0";  // Java prints doubles with a fraction: 1.0, 0.5
    }
    return s;
}

std::string print_bool(bool b) {
    return b ? "true" : "false";
}

// The accessors behind each table row.
struct config_access {
    std::string (*set)(topic_config&, std::string_view);
    std::string (*get)(const topic_config&);
};

#define SLUICE_LONG_FIELD(field, min, max)                                                    \
    config_access {                                                                           \
        [](topic_config& c, std::string_view v) { return parse_long(v, min, max, c.field); }, \
            [](const topic_config& c) { return std::to_string(c.field); }                     \
    }
#define SLUICE_INT_FIELD(field, min)                                                    \
    config_access {                                                                     \
        [](topic_config& c, std::string_view v) { return parse_int(v, min, c.field); }, \
            [](const topic_config& c) { return std::to_string(c.field); }               \
    }
#define SLUICE_BOOL_FIELD(field)                                                    \
    config_access {                                                                 \
        [](topic_config& c, std::string_view v) { return parse_bool(v, c.field); }, \
            [](const topic_config& c) { return print_bool(c.field); }               \
    }

struct table_row {
    config_def def;
    config_access access;
};

const std::vector<table_row>& table() {
    static const std::vector<table_row> rows = {
        {{"cleanup.policy", config_type::list, "delete",
          "delete: remove old segments by retention.ms/retention.bytes; compact: keep the latest "
          "record per key; both: compact,delete",
          "log.cleanup.policy"},
         {[](topic_config& c, std::string_view v) { return parse_cleanup_policy(v, c); },
          [](const topic_config& c) { return print_cleanup_policy(c); }}},
        {{"compression.type", config_type::string, "producer",
          "Codec of stored batches; only producer (keep batches as produced) is applied",
          "compression.type"},
         {[](topic_config& c, std::string_view v) -> std::string {
              auto s = lower(trim(v));
              static const char* valid[] = {"producer", "uncompressed", "gzip",
                                            "snappy",   "lz4",          "zstd"};
              if (std::find(std::begin(valid), std::end(valid), s) == std::end(valid)) {
                  return "must be one of producer, uncompressed, gzip, snappy, lz4, zstd";
              }
              c.compression_type = s;
              return {};
          },
          [](const topic_config& c) { return c.compression_type; }}},
        {{"delete.retention.ms", config_type::long_, "86400000",
          "How long a tombstone stays readable in a compacted topic",
          "log.cleaner.delete.retention.ms"},
         SLUICE_LONG_FIELD(delete_retention_ms, 0, long_max)},
        {{"file.delete.delay.ms", config_type::long_, "60000",
          "Accepted for compatibility; segments are deleted at once (open readers keep them)",
          "log.segment.delete.delay.ms"},
         SLUICE_LONG_FIELD(file_delete_delay_ms, 0, long_max)},
        {{"flush.messages", config_type::long_, "9223372036854775807",
          "Accepted for compatibility; durability follows the broker's flush policy",
          "log.flush.interval.messages"},
         SLUICE_LONG_FIELD(flush_messages, 1, long_max)},
        {{"flush.ms", config_type::long_, "9223372036854775807",
          "Accepted for compatibility; durability follows the broker's flush policy",
          "log.flush.interval.ms"},
         SLUICE_LONG_FIELD(flush_ms, 0, long_max)},
        {{"index.interval.bytes", config_type::int_, "4096",
          "Bytes of batches between two entries of the sparse offset and time indexes",
          "log.index.interval.bytes"},
         SLUICE_INT_FIELD(index_interval_bytes, 0)},
        {{"max.compaction.lag.ms", config_type::long_, "9223372036854775807",
          "Longest time a record stays uncompacted in a compacted topic",
          "log.cleaner.max.compaction.lag.ms"},
         SLUICE_LONG_FIELD(max_compaction_lag_ms, 1, long_max)},
        {{"max.message.bytes", config_type::int_, "1048588",
          "Largest record batch the topic accepts", "message.max.bytes"},
         SLUICE_INT_FIELD(max_message_bytes, 0)},
        {{"message.downconversion.enable", config_type::boolean, "true",
          "Accepted for compatibility; batches are always served as stored (magic 2)",
          "log.message.downconversion.enable"},
         SLUICE_BOOL_FIELD(message_downconversion_enable)},
        {{"message.format.version", config_type::string, "3.0-IV1",
          "Accepted and ignored, as Kafka 3.x did: batches are always stored as produced (magic 2)",
          "log.message.format.version"},
         {[](topic_config& c, std::string_view v) -> std::string {
              auto s = trim(v);
              // Kafka's versions look like 0.10.2, 2.8-IV1, 3.0: digits first, then digits,
              // letters, dots and dashes.
              if (s.empty() || s.size() > 32 || s.front() < '0' || s.front() > '9' ||
                  s.find_first_not_of("0123456789.-abcdefghijklmnopqrstuvwxyz"
                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string_view::npos) {
                  return "not a Kafka version such as 2.8 or 3.0-IV1";
              }
              c.message_format_version = std::string(s);
              return {};
          },
          [](const topic_config& c) { return c.message_format_version; }}},
        {{"message.timestamp.difference.max.ms", config_type::long_, "9223372036854775807",
          "Accepted for compatibility; not enforced", "log.message.timestamp.difference.max.ms"},
         SLUICE_LONG_FIELD(message_timestamp_difference_max_ms, 0, long_max)},
        {{"message.timestamp.type", config_type::string, "CreateTime",
          "CreateTime keeps the producer's timestamps; LogAppendTime stamps batches on append",
          "log.message.timestamp.type"},
         {[](topic_config& c, std::string_view v) -> std::string {
              auto s = trim(v);
              if (s == "CreateTime") {
                  c.message_timestamp_type = timestamp_type::create_time;
              } else if (s == "LogAppendTime") {
                  c.message_timestamp_type = timestamp_type::log_append_time;
              } else {
                  return "must be CreateTime or LogAppendTime";
              }
              return {};
          },
          [](const topic_config& c) -> std::string {
              return c.message_timestamp_type == timestamp_type::create_time ? "CreateTime"
                                                                             : "LogAppendTime";
          }}},
        {{"min.cleanable.dirty.ratio", config_type::double_, "0.5",
          "Share of not-yet-compacted bytes that makes a compacted log eligible for cleaning",
          "log.cleaner.min.cleanable.ratio"},
         {[](topic_config& c, std::string_view v) {
              return parse_ratio(v, c.min_cleanable_dirty_ratio);
          },
          [](const topic_config& c) { return print_ratio(c.min_cleanable_dirty_ratio); }}},
        {{"min.compaction.lag.ms", config_type::long_, "0",
          "Youngest age at which a record may be compacted away",
          "log.cleaner.min.compaction.lag.ms"},
         SLUICE_LONG_FIELD(min_compaction_lag_ms, 0, long_max)},
        {{"min.insync.replicas", config_type::int_, "1",
          "Accepted for compatibility; a single node is always in sync", "min.insync.replicas"},
         SLUICE_INT_FIELD(min_insync_replicas, 1)},
        {{"preallocate", config_type::boolean, "false",
          "Accepted for compatibility; segment files are not preallocated", "log.preallocate"},
         SLUICE_BOOL_FIELD(preallocate)},
        {{"retention.bytes", config_type::long_, "-1",
          "Largest size of a partition before old segments are deleted (-1: no limit)",
          "log.retention.bytes"},
         SLUICE_LONG_FIELD(retention_bytes, std::numeric_limits<std::int64_t>::min(), long_max)},
        {{"retention.ms", config_type::long_, "604800000",
          "Age after which whole segments are deleted (-1: keep forever)", "log.retention.ms"},
         SLUICE_LONG_FIELD(retention_ms, -1, long_max)},
        {{"segment.bytes", config_type::int_, "1073741824",
          "Size at which the active segment is closed and a new one started", "log.segment.bytes"},
         SLUICE_INT_FIELD(segment_bytes, 14)},
        {{"segment.index.bytes", config_type::int_, "10485760",
          "Largest offset index of a segment; a full index rolls the segment",
          "log.index.size.max.bytes"},
         SLUICE_INT_FIELD(segment_index_bytes, 4)},
        {{"segment.jitter.ms", config_type::long_, "0",
          "Accepted for compatibility; segments roll exactly at segment.ms", "log.roll.jitter.ms"},
         SLUICE_LONG_FIELD(segment_jitter_ms, 0, long_max)},
        {{"segment.ms", config_type::long_, "604800000",
          "Age at which the active segment is closed even if not full", "log.roll.ms"},
         SLUICE_LONG_FIELD(segment_ms, 1, long_max)},
        {{"unclean.leader.election.enable", config_type::boolean, "false",
          "Accepted for compatibility; there is one replica", "unclean.leader.election.enable"},
         SLUICE_BOOL_FIELD(unclean_leader_election_enable)},
    };
    return rows;
}

#undef SLUICE_LONG_FIELD
#undef SLUICE_INT_FIELD
#undef SLUICE_BOOL_FIELD

const table_row* find_row(std::string_view name) {
    for (const auto& r : table()) {
        if (r.def.name == name) {
            return &r;
        }
    }
    return nullptr;
}

void set_error(std::string* error, std::string text) {
    if (error != nullptr) {
        *error = std::move(text);
    }
}

}  // namespace

result<topic_config> topic_config::from_overrides(
    const std::map<std::string, std::string>& overrides, const topic_config& defaults,
    std::string* error) {
    topic_config c = defaults;
    for (const auto& [key, value] : overrides) {
        const table_row* row = find_row(key);
        if (row == nullptr) {
            set_error(error, "unknown topic config " + key);
            return fail(errc::invalid_config);
        }
        if (auto why = row->access.set(c, value); !why.empty()) {
            set_error(error, "invalid value '" + value + "' for " + key + ": " + why);
            return fail(errc::invalid_config);
        }
    }
    return c;
}

std::map<std::string, std::string> topic_config::to_map() const {
    std::map<std::string, std::string> out;
    for (const auto& r : table()) {
        out.emplace(std::string(r.def.name), r.access.get(*this));
    }
    return out;
}

std::optional<std::string> topic_config::get(std::string_view name) const {
    if (const table_row* row = find_row(name)) {
        return row->access.get(*this);
    }
    return std::nullopt;
}

const std::vector<config_def>& topic_config_defs() {
    static const std::vector<config_def> defs = [] {
        std::vector<config_def> out;
        for (const auto& r : table()) {
            out.push_back(r.def);
        }
        return out;
    }();
    return defs;
}

const config_def* find_topic_config_def(std::string_view name) {
    const table_row* row = find_row(name);
    return row == nullptr ? nullptr : &row->def;
}

std::vector<std::string_view> broker_default_keys() {
    std::vector<std::string_view> out;
    for (const auto& r : table()) {
        if (!r.def.broker_key.empty()) {
            out.push_back(r.def.broker_key);
        }
    }
    // The unit variants broker_defaults() also reads.
    for (std::string_view k : {"log.retention.hours", "log.retention.minutes", "log.roll.hours",
                               "log.roll.jitter.hours"}) {
        out.push_back(k);
    }
    return out;
}

std::vector<std::string_view> broker_config_synonyms(std::string_view key) {
    static const std::vector<std::vector<std::string_view>> groups = {
        {"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
        {"log.roll.ms", "log.roll.hours"},
        {"log.roll.jitter.ms", "log.roll.jitter.hours"},
    };
    for (const auto& g : groups) {
        if (std::find(g.begin(), g.end(), key) != g.end()) {
            return g;
        }
    }
    return {key};
}

void override_broker_properties(std::map<std::string, std::string>& props,
                                const std::map<std::string, std::string>& over) {
    for (const auto& [key, value] : over) {
        for (auto synonym : broker_config_synonyms(key)) {
            props.erase(std::string(synonym));
        }
        props[key] = value;
    }
}

result<topic_config> broker_defaults(const std::map<std::string, std::string>& props,
                                     std::string* error) {
    topic_config c;
    auto apply = [&](std::string_view topic_key, const std::string& broker_key,
                     const std::string& value) -> bool {
        const table_row* row = find_row(topic_key);
        if (auto why = row->access.set(c, value); !why.empty()) {
            set_error(error, "invalid value '" + value + "' for " + broker_key + ": " + why);
            return false;
        }
        return true;
    };
    for (const auto& r : table()) {
        if (r.def.broker_key.empty()) {
            continue;
        }
        auto it = props.find(std::string(r.def.broker_key));
        if (it != props.end() && !apply(r.def.name, it->first, it->second)) {
            return fail(errc::invalid_config);
        }
    }
    // compat: Kafka's unit variants; the finer unit wins (ms over minutes over hours).
    struct unit_key {
        const char* topic_key;
        const char* broker_key;
        std::int64_t scale;
    };
    static const unit_key coarse[] = {
        {"retention.ms", "log.retention.hours", 3600000},
        {"retention.ms", "log.retention.minutes", 60000},
        {"segment.ms", "log.roll.hours", 3600000},
        {"segment.jitter.ms", "log.roll.jitter.hours", 3600000},
    };
    for (const auto& k : coarse) {
        const table_row* row = find_row(k.topic_key);
        if (props.count(std::string(row->def.broker_key)) != 0) {
            continue;  // the ms key was given
        }
        bool finer_given = std::string_view(k.broker_key) == "log.retention.hours" &&
                           props.count("log.retention.minutes") != 0;
        auto it = props.find(k.broker_key);
        if (it == props.end() || finer_given) {
            continue;
        }
        std::int64_t v = 0;
        if (auto why = parse_long(it->second, -1, long_max / k.scale, v); !why.empty()) {
            set_error(error, "invalid value '" + it->second + "' for " + k.broker_key + ": " + why);
            return fail(errc::invalid_config);
        }
        if (!apply(k.topic_key, it->first, std::to_string(v < 0 ? -1 : v * k.scale))) {
            return fail(errc::invalid_config);
        }
    }
    return c;
}

}  // namespace sluice::backend::log
