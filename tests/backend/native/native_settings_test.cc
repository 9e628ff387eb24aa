// The native backend's settings tables (backend/native/native_settings.h): their defaults are
// the defaults of the options they fill, every name is declared once, and a dependent bound
// (the longest session timeout at least the shortest) is refused by the reader.
#include <gtest/gtest.h>

#include <charconv>
#include <set>
#include <stdexcept>
#include <string>

#include "backend/native/native_settings.h"

namespace sluice::backend::native {
namespace {

using props = std::map<std::string, std::string>;

/// setting_values over a plain map: the declared default when a name is not given; a value
/// out of range or not a number throws.
class map_values final : public api::setting_values {
public:
    explicit map_values(std::map<std::string, std::string> props) : props_(std::move(props)) {}

    std::int64_t get_int(const api::setting& s) const override {
        const std::string text = get_string(s);
        std::int64_t v = 0;
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || ptr != text.data() + text.size() || v < s.min || v > s.max) {
            fail(s, "bad value '" + text + "'");
        }
        return v;
    }
    bool get_bool(const api::setting& s) const override { return get_string(s) == "true"; }
    std::string get_string(const api::setting& s) const override {
        auto it = props_.find(std::string(s.name));
        return it == props_.end() ? std::string(s.default_value) : it->second;
    }
    std::vector<std::string> get_list(const api::setting& s) const override {
        std::vector<std::string> out;
        std::string text = get_string(s);
        for (std::size_t start = 0; start <= text.size();) {
            auto end = std::min(text.find(',', start), text.size());
            if (end > start) {
                out.push_back(text.substr(start, end - start));
            }
            start = end + 1;
        }
        return out;
    }
    bool is_set(const api::setting& s) const override {
        return props_.count(std::string(s.name)) != 0;
    }
    const std::map<std::string, std::string>& properties() const override { return props_; }
    [[noreturn]] void fail(const api::setting& s, const std::string& message) const override {
        throw std::runtime_error(std::string(s.name) + ": " + message);
    }

private:
    std::map<std::string, std::string> props_;
};

TEST(NativeSettings, TheDeclaredDefaultsAreTheOptionsDefaults) {
    const native_options read = read_native_options(map_values(props{}), "/data");
    const native_options plain;
    EXPECT_EQ(read.log.data_dir, "/data");
    EXPECT_EQ(read.log.retention_check_interval, plain.log.retention_check_interval);
    EXPECT_EQ(read.log.compaction_check_interval, plain.log.compaction_check_interval);
    EXPECT_EQ(read.log.recovery_progress_interval, plain.log.recovery_progress_interval);

    const auto& g = read.groups;
    const auto& pg = plain.groups;
    EXPECT_EQ(g.min_session_timeout_ms, pg.min_session_timeout_ms);
    EXPECT_EQ(g.max_session_timeout_ms, pg.max_session_timeout_ms);
    EXPECT_EQ(g.initial_rebalance_delay_ms, pg.initial_rebalance_delay_ms);
    EXPECT_EQ(g.max_size, pg.max_size);
    EXPECT_EQ(g.offsets_retention_ms, pg.offsets_retention_ms);
    EXPECT_EQ(g.offsets_retention_check_interval_ms, pg.offsets_retention_check_interval_ms);
    EXPECT_EQ(g.offset_metadata_max_bytes, pg.offset_metadata_max_bytes);
    EXPECT_EQ(g.offsets_topic_partitions, pg.offsets_topic_partitions);
    EXPECT_EQ(g.offsets_topic_segment_bytes, pg.offsets_topic_segment_bytes);
    EXPECT_EQ(g.consumer_heartbeat_interval_ms, pg.consumer_heartbeat_interval_ms);
    EXPECT_EQ(g.consumer_session_timeout_ms, pg.consumer_session_timeout_ms);
    EXPECT_EQ(g.consumer_min_session_timeout_ms, pg.consumer_min_session_timeout_ms);
    EXPECT_EQ(g.consumer_max_session_timeout_ms, pg.consumer_max_session_timeout_ms);
    EXPECT_EQ(g.consumer_min_heartbeat_interval_ms, pg.consumer_min_heartbeat_interval_ms);
    EXPECT_EQ(g.consumer_max_heartbeat_interval_ms, pg.consumer_max_heartbeat_interval_ms);
    EXPECT_EQ(g.consumer_max_size, pg.consumer_max_size);
    EXPECT_EQ(g.consumer_assignors, pg.consumer_assignors);

    EXPECT_EQ(read.producers.producer_id_expiration_ms, plain.producers.producer_id_expiration_ms);
    EXPECT_EQ(read.producers.expiration_check_interval_ms,
              plain.producers.expiration_check_interval_ms);
    EXPECT_EQ(read.producers.snapshot_interval_ms, plain.producers.snapshot_interval_ms);

    const auto& t = read.transactions;
    const auto& pt = plain.transactions;
    EXPECT_EQ(t.max_timeout_ms, pt.max_timeout_ms);
    EXPECT_EQ(t.id_expiration_ms, pt.id_expiration_ms);
    EXPECT_EQ(t.abort_check_interval_ms, pt.abort_check_interval_ms);
    EXPECT_EQ(t.expiry_check_interval_ms, pt.expiry_check_interval_ms);
    EXPECT_EQ(t.state_log_partitions, pt.state_log_partitions);
    EXPECT_EQ(t.state_log_segment_bytes, pt.state_log_segment_bytes);
    EXPECT_EQ(t.transaction_version, pt.transaction_version);

    EXPECT_EQ(read.queues.partitions, plain.queues.partitions);
    EXPECT_EQ(read.queues.limits.read_ahead_bytes, plain.queues.limits.read_ahead_bytes);
    EXPECT_EQ(read.queues.limits.read_ahead_messages, plain.queues.limits.read_ahead_messages);
    EXPECT_EQ(read.queues.limits.max_in_flight, plain.queues.limits.max_in_flight);
    EXPECT_EQ(read.queues.deleted_name_reuse_ms, plain.queues.deleted_name_reuse_ms);
    EXPECT_EQ(read.queues.purge_interval_ms, plain.queues.purge_interval_ms);
    EXPECT_EQ(read.queue_state_segment_bytes, plain.queue_state_segment_bytes);
}

TEST(NativeSettings, EveryNameIsDeclaredOnce) {
    std::set<std::string_view> names;
    for (const auto& t : native_setting_tables()) {
        for (const auto& s : t.settings) {
            EXPECT_TRUE(names.insert(s.name).second) << s.name;
            EXPECT_FALSE(s.doc.empty()) << s.name;
        }
    }
    EXPECT_TRUE(names.count("log.segment.bytes"));  // a broker-level topic default
    EXPECT_TRUE(names.count("log.retention.hours"));
    EXPECT_TRUE(names.count("sqs.queue.partitions"));
}

TEST(NativeSettings, TheLongestSessionTimeoutIsAtLeastTheShortest) {
    try {
        read_native_options(map_values(props{{"group.min.session.timeout.ms", "10000"},
                                        {"group.max.session.timeout.ms", "9000"}}),
                            "/data");
        FAIL() << "a maximum below the minimum was accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "group.max.session.timeout.ms: must be at least group.min.session.timeout.ms "
                  "(10000)");
    }
}

TEST(NativeSettings, AnUnknownAssignorIsRefused) {
    EXPECT_THROW(read_native_options(map_values(props{{"group.consumer.assignors", "sticky"}}), "/d"),
                 std::runtime_error);
}

}  // namespace
}  // namespace sluice::backend::native
