// The records of __consumer_offsets: byte-exact encodings against bytes built here from
// Kafka's published message definitions (group-coordinator's OffsetCommit*, GroupMetadata*
// and ConsumerGroup* JSON files), Kafka's older versions, sluice's earlier layout, and a data
// dir written in that earlier layout replayed and rewritten.
#include "backend/group/group_records.h"
#include "backend/log/partition_log.h"
#include "protocol/kafka/record.h"
#include "tests/backend/group/group_test_support.h"
#include "tests/backend/support.h"

namespace sluice::backend::group::test {
namespace {

/// Big-endian bytes built by hand, field by field.
class bytes_out {
public:
    bytes_out& i8(std::int8_t v) { return put(static_cast<std::uint64_t>(v), 1); }
    bytes_out& i16(std::int16_t v) { return put(static_cast<std::uint16_t>(v), 2); }
    bytes_out& i32(std::int32_t v) { return put(static_cast<std::uint32_t>(v), 4); }
    bytes_out& i64(std::int64_t v) { return put(static_cast<std::uint64_t>(v), 8); }
    /// int16 length + bytes (non-flexible string).
    bytes_out& str(const std::string& s) {
        i16(static_cast<std::int16_t>(s.size()));
        return raw(s);
    }
    bytes_out& null_str() { return i16(-1); }
    /// int32 length + bytes (non-flexible bytes).
    bytes_out& bytes(const std::string& s) {
        i32(static_cast<std::int32_t>(s.size()));
        return raw(s);
    }
    /// uvarint (values below 128 here: one byte).
    bytes_out& uv(std::uint8_t n) { return put(n, 1); }
    /// Compact string: uvarint length+1 and the bytes.
    bytes_out& cstr(const std::string& s) {
        uv(static_cast<std::uint8_t>(s.size() + 1));
        return raw(s);
    }
    bytes_out& cnull() { return uv(0); }
    bytes_out& id(const uuid& u) {
        for (auto b : u.bytes) {
            out_.push_back(static_cast<std::byte>(b));
        }
        return *this;
    }
    bytes_out& raw(const std::string& s) {
        for (char c : s) {
            out_.push_back(static_cast<std::byte>(c));
        }
        return *this;
    }
    const std::vector<std::byte>& get() const { return out_; }
    protocol::bytes_view view() const { return {out_.data(), out_.size()}; }

private:
    bytes_out& put(std::uint64_t v, int n) {
        for (int i = n - 1; i >= 0; --i) {
            out_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
        }
        return *this;
    }
    std::vector<std::byte> out_;
};

protocol::bytes_view view(const std::vector<std::byte>& v) {
    return {v.data(), v.size()};
}

uuid topic_uuid(std::uint8_t fill) {
    uuid u;
    for (std::size_t i = 0; i < u.bytes.size(); ++i) {
        u.bytes[i] = static_cast<decltype(u.bytes)::value_type>(fill + i);
    }
    return u;
}

// --- committed offsets -------------------------------------------------------------------

TEST(GroupRecords, OffsetCommitIsKeyVersion1AndValueVersion3) {
    committed_offset c{offset(42), 3, std::string("meta"), 1'700'000'000'123, -1};
    auto rec = offset_record("grp", "topic", 5, c);
    EXPECT_EQ(rec.key, bytes_out().i16(1).str("grp").str("topic").i32(5).get());
    ASSERT_TRUE(rec.value);
    EXPECT_EQ(*rec.value,
              bytes_out().i16(3).i64(42).i32(3).str("meta").i64(1'700'000'000'123).get());
}

TEST(GroupRecords, OffsetCommitWithAnExpiryIsValueVersion1) {
    committed_offset c{offset(7), 3, std::string("m"), 1000, 5000};
    EXPECT_EQ(encode_offset_value(c), bytes_out().i16(1).i64(7).str("m").i64(1000).i64(5000).get());
    auto back = decode_offset_value(view(encode_offset_value(c)));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->expire_timestamp_ms, 5000);
    EXPECT_EQ(back->leader_epoch, -1);  // version 1 has none
}

TEST(GroupRecords, NullMetadataIsWrittenEmpty) {
    committed_offset c{offset(1), -1, std::nullopt, 10, -1};
    EXPECT_EQ(encode_offset_value(c), bytes_out().i16(3).i64(1).i32(-1).str("").i64(10).get());
}

TEST(GroupRecords, OffsetTombstoneHasTheKeyAndNoValue) {
    auto rec = offset_tombstone("g", "t", 0);
    EXPECT_EQ(rec.key, bytes_out().i16(1).str("g").str("t").i32(0).get());
    EXPECT_FALSE(rec.value);
}

TEST(GroupRecords, EveryKafkaOffsetValueVersionIsRead) {
    auto v0 = decode_offset_value(bytes_out().i16(0).i64(5).str("a").i64(100).view());
    ASSERT_TRUE(v0);
    EXPECT_EQ(v0->committed, offset(5));
    EXPECT_EQ(v0->metadata, "a");
    EXPECT_EQ(v0->commit_timestamp_ms, 100);
    auto v2 = decode_offset_value(bytes_out().i16(2).i64(6).str("").i64(200).view());
    ASSERT_TRUE(v2);
    EXPECT_EQ(v2->commit_timestamp_ms, 200);
    // Version 4 is flexible: a compact string and tagged fields (one unknown tag skipped).
    auto v4 = decode_offset_value(
        bytes_out().i16(4).i64(8).i32(2).cstr("xy").i64(300).uv(1).uv(9).uv(2).raw("zz").view());
    ASSERT_TRUE(v4) << v4.error().message();
    EXPECT_EQ(v4->committed, offset(8));
    EXPECT_EQ(v4->leader_epoch, 2);
    EXPECT_EQ(v4->metadata, "xy");
    EXPECT_FALSE(decode_offset_value(bytes_out().i16(5).i64(8).i32(2).str("").i64(1).view()));
}

// --- classic groups ----------------------------------------------------------------------

TEST(GroupRecords, GroupMetadataIsKeyVersion2AndValueVersion3) {
    stored_group g;
    g.state_timestamp_ms = 1234;
    g.protocol_type = "consumer";
    g.generation_id = 7;
    g.protocol_name = "range";
    g.leader = "m1";
    g.members.push_back({"m1", std::string("i1"), "client", "/127.0.0.1", 30000, 10000,
                         {std::byte{1}, std::byte{2}}, {std::byte{3}}});
    g.members.push_back({"m2", std::nullopt, "c2", "/h", 40000, 6000, {}, {}});
    auto rec = group_record("grp", g);
    EXPECT_EQ(rec.key, bytes_out().i16(2).str("grp").get());
    const auto want = bytes_out()
                          .i16(3)
                          .str("consumer")
                          .i32(7)
                          .str("range")
                          .str("m1")
                          .i64(1234)
                          .i32(2)
                          // member 1
                          .str("m1")
                          .str("i1")
                          .str("client")
                          .str("/127.0.0.1")
                          .i32(30000)
                          .i32(10000)
                          .bytes("\x01\x02")
                          .bytes("\x03")
                          // member 2
                          .str("m2")
                          .null_str()
                          .str("c2")
                          .str("/h")
                          .i32(40000)
                          .i32(6000)
                          .bytes("")
                          .bytes("")
                          .get();
    ASSERT_TRUE(rec.value);
    EXPECT_EQ(*rec.value, want);
    auto back = decode_group_value(view(*rec.value));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, g);
    EXPECT_EQ(group_tombstone("grp").key, rec.key);
    EXPECT_FALSE(group_tombstone("grp").value);
}

TEST(GroupRecords, GroupMetadataVersion0IsRead) {
    auto v0 = decode_group_value(bytes_out()
                                     .i16(0)
                                     .str("consumer")
                                     .i32(2)
                                     .null_str()
                                     .null_str()
                                     .i32(1)
                                     .str("m")
                                     .str("c")
                                     .str("h")
                                     .i32(10000)
                                     .bytes("s")
                                     .bytes("a")
                                     .view());
    ASSERT_TRUE(v0) << v0.error().message();
    EXPECT_EQ(v0->generation_id, 2);
    EXPECT_EQ(v0->state_timestamp_ms, -1);
    ASSERT_EQ(v0->members.size(), 1u);
    EXPECT_EQ(v0->members[0].session_timeout_ms, 10000);
    EXPECT_EQ(v0->members[0].rebalance_timeout_ms, -1);
}

// --- KIP-848 groups ----------------------------------------------------------------------

TEST(GroupRecords, ConsumerGroupEpochRecordsAreTypes3And6) {
    auto epoch = consumer_group_record(record_type::consumer_group_metadata, "cg",
                                       encode_epoch_value(9));
    EXPECT_EQ(epoch.key, bytes_out().i16(3).str("cg").get());
    EXPECT_EQ(*epoch.value, bytes_out().i16(0).i32(9).uv(0).get());
    auto target = consumer_group_record(record_type::consumer_group_target_assignment_metadata,
                                        "cg", encode_epoch_value(8));
    EXPECT_EQ(target.key, bytes_out().i16(6).str("cg").get());
    EXPECT_EQ(*target.value, bytes_out().i16(0).i32(8).uv(0).get());
    // Kafka 4.1 adds a tagged MetadataHash: skipped.
    auto tagged = decode_epoch_value(bytes_out().i16(0).i32(4).uv(1).uv(0).uv(8).i64(77).view());
    ASSERT_TRUE(tagged);
    EXPECT_EQ(*tagged, 4);
}

TEST(GroupRecords, PartitionMetadataIsType4) {
    std::map<std::string, subscribed_topic> topics{{"a", {topic_uuid(1), 3}},
                                                   {"b", {topic_uuid(50), 1}}};
    auto rec = consumer_group_record(record_type::consumer_group_partition_metadata, "cg",
                                     encode_partition_metadata_value(topics));
    EXPECT_EQ(rec.key, bytes_out().i16(4).str("cg").get());
    const auto want = bytes_out()
                          .i16(0)
                          .uv(3)  // two topics
                          .id(topic_uuid(1))
                          .cstr("a")
                          .i32(3)
                          .uv(1)  // no partition racks
                          .uv(0)
                          .id(topic_uuid(50))
                          .cstr("b")
                          .i32(1)
                          .uv(1)
                          .uv(0)
                          .uv(0)
                          .get();
    EXPECT_EQ(*rec.value, want);
    auto back = decode_partition_metadata_value(view(*rec.value));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, topics);
}

TEST(GroupRecords, MemberMetadataIsType5) {
    member_metadata m;
    m.instance_id = "inst";
    m.client_id = "client";
    m.client_host = "/127.0.0.1";
    m.subscribed_topic_names = {"t", "u"};
    m.rebalance_timeout_ms = 30000;
    m.server_assignor = "uniform";
    auto rec = consumer_member_record(record_type::consumer_group_member_metadata, "cg", "m1",
                                      encode_member_metadata_value(m));
    EXPECT_EQ(rec.key, bytes_out().i16(5).str("cg").str("m1").get());
    const auto want = bytes_out()
                          .i16(0)
                          .cstr("inst")
                          .cnull()  // rack
                          .cstr("client")
                          .cstr("/127.0.0.1")
                          .uv(3)
                          .cstr("t")
                          .cstr("u")
                          .cnull()  // regex
                          .i32(30000)
                          .cstr("uniform")
                          .uv(0)
                          .get();
    EXPECT_EQ(*rec.value, want);
    auto back = decode_member_metadata_value(view(*rec.value));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, m);
}

TEST(GroupRecords, TargetAndCurrentAssignmentsAreTypes7And8) {
    const topic_partitions tp{{topic_uuid(1), {0, 2}}};
    auto target = consumer_member_record(record_type::consumer_group_target_assignment_member,
                                         "cg", "m1", encode_target_assignment_value(tp));
    EXPECT_EQ(target.key, bytes_out().i16(7).str("cg").str("m1").get());
    EXPECT_EQ(*target.value,
              bytes_out().i16(0).uv(2).id(topic_uuid(1)).uv(3).i32(0).i32(2).uv(0).uv(0).get());

    member_assignment a{5, 4, member_state::unrevoked_partitions, tp,
                        {{topic_uuid(9), {1}}}};
    auto current = consumer_member_record(record_type::consumer_group_current_member_assignment,
                                          "cg", "m1", encode_member_assignment_value(a));
    EXPECT_EQ(current.key, bytes_out().i16(8).str("cg").str("m1").get());
    const auto want = bytes_out()
                          .i16(0)
                          .i32(5)
                          .i32(4)
                          .i8(1)  // Kafka's MemberState.UNREVOKED_PARTITIONS
                          .uv(2)
                          .id(topic_uuid(1))
                          .uv(3)
                          .i32(0)
                          .i32(2)
                          .uv(0)
                          .uv(2)
                          .id(topic_uuid(9))
                          .uv(2)
                          .i32(1)
                          .uv(0)
                          .uv(0)
                          .get();
    EXPECT_EQ(*current.value, want);
    auto back = decode_member_assignment_value(view(*current.value));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, a);
}

// --- keys, the legacy layout, garbage ----------------------------------------------------

TEST(GroupRecords, KeysDecodeByType) {
    auto k = decode_key(bytes_out().i16(1).str("g").str("t").i32(3).view());
    ASSERT_TRUE(k);
    EXPECT_FALSE(k->legacy);
    EXPECT_EQ(std::get<offset_key>(k->key), (offset_key{"g", "t", 3}));
    k = decode_key(bytes_out().i16(8).str("g").str("m").view());
    ASSERT_TRUE(k);
    EXPECT_EQ(std::get<consumer_member_key>(k->key),
              (consumer_member_key{record_type::consumer_group_current_member_assignment, "g",
                                   "m"}));
    // Share groups (types 9+) are not ours: refused, so replay skips them.
    EXPECT_FALSE(decode_key(bytes_out().i16(10).str("g").str("m").view()));
}

TEST(GroupRecords, TheEarlierLayoutIsReadAsLegacy) {
    auto offset_key0 = decode_key(bytes_out().i16(0).str("g").str("t").i32(1).view());
    ASSERT_TRUE(offset_key0);
    EXPECT_TRUE(offset_key0->legacy);
    auto value = decode_offset_value(
        bytes_out().i16(0).i64(11).i32(4).bytes("meta").i64(100).i64(-1).view(), true);
    ASSERT_TRUE(value) << value.error().message();
    EXPECT_EQ(*value, (committed_offset{offset(11), 4, std::string("meta"), 100, -1}));

    auto group_key1 = decode_key(bytes_out().i16(1).str("g").view());
    ASSERT_TRUE(group_key1);
    EXPECT_TRUE(group_key1->legacy);
    EXPECT_EQ(std::get<group_key>(group_key1->key).group, "g");
    auto consumer = decode_legacy_group_value(bytes_out().i16(0).i8(1).i64(55).i32(6).view());
    ASSERT_TRUE(consumer);
    EXPECT_TRUE(consumer->consumer);
    EXPECT_EQ(consumer->group_epoch, 6);
}

TEST(GroupRecords, GarbageIsRejectedNotTrusted) {
    std::vector<std::byte> junk(7, std::byte{0x7f});
    EXPECT_FALSE(decode_key(view(junk)));
    EXPECT_FALSE(decode_offset_value(view(junk)));
    EXPECT_FALSE(decode_group_value(view(junk)));
    EXPECT_FALSE(decode_member_assignment_value(view(junk)));
    // Bytes left over after a valid value: refused too.
    EXPECT_FALSE(decode_epoch_value(bytes_out().i16(0).i32(1).uv(0).i8(0).view()));
    // A member count far beyond the bytes: refused before allocating.
    EXPECT_FALSE(decode_group_value(
        bytes_out().i16(3).str("").i32(0).null_str().null_str().i64(0).i32(1 << 30).view()));
}

// --- a data dir in the earlier layout ----------------------------------------------------

/// Every record of __consumer_offsets-0: key and value (null: a tombstone).
std::vector<std::pair<std::string, std::optional<std::string>>> offsets_topic(log::log_manager& l) {
    std::vector<std::pair<std::string, std::optional<std::string>>> out;
    auto part = l.partition("__consumer_offsets", partition_id(0));
    EXPECT_TRUE(part);
    (void)part->replay(part->log_start_offset(), [&](protocol::bytes_view batch) {
        for (const auto& r : backend::test::decode_records(batch)) {
            out.emplace_back(r.key.value_or(""), r.value);
        }
        return true;
    });
    return out;
}

std::string str(const bytes_out& b) {
    return std::string(reinterpret_cast<const char*>(b.get().data()), b.get().size());
}

class LegacyLayoutTest : public GroupTest {
protected:
    /// Writes records in sluice's earlier layout, as that version did, then restarts.
    void write_legacy_and_restart() {
        ASSERT_TRUE(log->create_internal_topic("__consumer_offsets", 1,
                                               {{"cleanup.policy", "compact"}}));
        auto part = log->partition("__consumer_offsets", partition_id(0));
        const auto member = bytes_out()
                                .str("m1")
                                .null_str()
                                .str("client")
                                .str("/127.0.0.1")
                                .i32(30000)
                                .i32(10000)
                                .str("consumer")
                                .bytes(std::string(reinterpret_cast<const char*>(
                                                       subscription({"t"}).data()),
                                                   subscription({"t"}).size()))
                                .bytes("assignment");
        std::vector<backend::test::test_record> recs{
            // Offsets of a classic group and of a simple one, and of a deleted one.
            {str(bytes_out().i16(0).str("old").str("t").i32(0)),
             str(bytes_out().i16(0).i64(100).i32(2).bytes("m0").i64(now).i64(-1)), now},
            {str(bytes_out().i16(0).str("old").str("t").i32(5)),
             str(bytes_out().i16(0).i64(500).i32(-1).i32(-1).i64(now).i64(-1)), now},
            {str(bytes_out().i16(0).str("simple").str("u").i32(1)),
             str(bytes_out().i16(0).i64(7).i32(-1).bytes("").i64(now).i64(now + 3'600'000)),
             now},
            {str(bytes_out().i16(0).str("gone").str("t").i32(0)),
             str(bytes_out().i16(0).i64(9).i32(-1).bytes("").i64(now).i64(-1)), now},
            {str(bytes_out().i16(0).str("gone").str("t").i32(0)), std::nullopt, now},
            // The classic group's state: generation 3, one member.
            {str(bytes_out().i16(1).str("old")),
             str(bytes_out()
                     .i16(0)
                     .i8(0)
                     .i64(now - 5000)
                     .str("consumer")
                     .i32(3)
                     .str("range")
                     .str("m1")
                     .i32(1)
                     .raw(str(member))),
             now},
            // A KIP-848 group (the earlier layout kept its epoch only) with an offset.
            {str(bytes_out().i16(1).str("kip848")),
             str(bytes_out().i16(0).i8(1).i64(now - 9000).i32(4)), now},
            {str(bytes_out().i16(0).str("kip848").str("t").i32(2)),
             str(bytes_out().i16(0).i64(20).i32(-1).bytes("x").i64(now).i64(-1)), now},
        };
        auto batch = backend::test::make_batch(recs);
        log::append_options opts;
        opts.now_ms = now;
        ASSERT_TRUE(part->append(std::span<std::byte>(batch.data(), batch.size()), opts));
        restart();
    }

    void expect_legacy_state() {
        EXPECT_EQ(committed("old", 0), 100);
        EXPECT_EQ(committed("old", 5), 500);
        EXPECT_EQ(committed("simple", 1, "u"), 7);
        EXPECT_EQ(committed("gone", 0), -1);
        EXPECT_EQ(committed("kip848", 2), 20);
        offset_fetch_request r;
        r.group_id = group_id("old");
        r.topics = std::vector<topic_partition_list>{{topic_name("t"), {partition_id(0)}}};
        auto res = coord->fetch_offsets_now({r});
        EXPECT_EQ(res[0].topics[0].partitions[0].leader_epoch, 2);
        EXPECT_EQ(res[0].topics[0].partitions[0].metadata, "m0");
        auto d = coord->describe_groups_now({group_id("old")});
        EXPECT_EQ(d[0].state, "Stable");
        ASSERT_EQ(d[0].members.size(), 1u);
        EXPECT_EQ(d[0].members[0].member_id, "m1");
        EXPECT_FALSE(beat("old", "m1", 3));
        auto c = coord->describe_consumer_groups_now({group_id("kip848")});
        ASSERT_EQ(c.size(), 1u);
        EXPECT_EQ(c[0].group_epoch, 4);
    }
};

TEST_F(LegacyLayoutTest, EarlierLayoutReplaysAndIsRewrittenInKafkasOnce) {
    write_legacy_and_restart();
    expect_legacy_state();

    // The rewrite: every live legacy key has a tombstone after it, and the state is there
    // in Kafka's layout.
    auto records = offsets_topic(*log);
    std::set<std::string> legacy_live;
    std::set<std::int16_t> new_types;
    for (const auto& [key, value] : records) {
        auto k = decode_key(protocol::as_bytes(key));
        ASSERT_TRUE(k);
        if (k->legacy) {
            if (value) {
                legacy_live.insert(key);
            } else {
                legacy_live.erase(key);
            }
        } else if (value) {
            new_types.insert(static_cast<std::int16_t>(
                std::visit([](const auto& x) -> record_type {
                    using T = std::decay_t<decltype(x)>;
                    if constexpr (std::is_same_v<T, offset_key>) {
                        return record_type::offset_commit;
                    } else if constexpr (std::is_same_v<T, group_key>) {
                        return record_type::group_metadata;
                    } else {
                        return x.type;
                    }
                }, k->key)));
        }
    }
    EXPECT_TRUE(legacy_live.empty());
    EXPECT_TRUE(new_types.contains(1));
    EXPECT_TRUE(new_types.contains(2));
    EXPECT_TRUE(new_types.contains(3));

    // A second start reads the new layout only and rewrites nothing.
    const auto count = records.size();
    restart();
    expect_legacy_state();
    EXPECT_EQ(offsets_topic(*log).size(), count);
}

}  // namespace
}  // namespace sluice::backend::group::test
