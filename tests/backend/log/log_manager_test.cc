#include <gtest/gtest.h>

#include <malloc.h>

#include "backend/log/errc.h"
#include "backend/log/topic_store.h"
#include "tests/backend/log/log_fixture.h"

namespace sluice::backend::test {
namespace {

using LogManager = LogTest;
using log::errc;

TEST_F(LogManager, TopicNamesFollowKafkaRules) {
    auto m = open_log();
    for (std::string bad :
         std::vector<std::string>{"", ".", "..", "a/b", "a b", "ü", std::string(250, 'a')}) {
        auto r = m->create_topic(bad, 1, {});
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error(), errc::invalid_topic_name) << bad;
    }
    EXPECT_TRUE(m->create_topic(std::string(249, 'a'), 1, {}));
    EXPECT_TRUE(m->create_topic("Az09._-", 1, {}));
}

TEST_F(LogManager, TheLongestTopicNameIsStoredAlteredAndRecovered) {
    // 249 characters: "<name>.topic" is 255 bytes, the most one file name may have (the
    // in-memory file system refuses longer ones, as Linux does).
    const std::string name(249, 'n');
    {
        auto m = open_log();
        ASSERT_TRUE(m->create_topic(name, 2, {}));
        ASSERT_TRUE(m->alter_config(name, {{"retention.ms", "2000"}}));
        ASSERT_TRUE(m->create_partitions(name, 12));
        append(*m->partition(name, partition_id(11)), make_batch(2, 10, 0));
    }
    auto m = open_log();
    auto t = m->find_topic(name);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->partitions, 12);
    EXPECT_EQ(t->config.retention_ms, 2000);
    EXPECT_EQ(m->partition(name, partition_id(11))->log_end_offset(), offset(2));
    auto topics = fs->list("/data/topics");
    ASSERT_TRUE(topics);
    EXPECT_EQ(*topics, std::vector<std::string>{name + ".topic"});
    ASSERT_TRUE(m->delete_topic(name));
    EXPECT_FALSE(m->find_topic(name));
}

TEST_F(LogManager, CreateTopicChecksPartitionsConfigAndDuplicates) {
    auto m = open_log();
    EXPECT_EQ(m->create_topic("t", 0, {}).error(), errc::invalid_partitions);
    std::string why;
    EXPECT_EQ(m->create_topic("t", 1, {{"retention.ms", "soon"}}, false, &why).error(),
              errc::invalid_config);
    EXPECT_NE(why.find("retention.ms"), std::string::npos);
    ASSERT_TRUE(m->create_topic("a.b", 1, {}));
    EXPECT_EQ(m->create_topic("a.b", 1, {}).error(), errc::topic_already_exists);
    EXPECT_EQ(m->create_topic("a_b", 1, {}, false, &why).error(), errc::invalid_topic_name);
    EXPECT_NE(why.find("collides"), std::string::npos);
}

TEST_F(LogManager, ValidateOnlyCreatesNothing) {
    auto m = open_log();
    auto r = m->create_topic("t", 3, {{"cleanup.policy", "compact"}}, true);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->partitions, 3);
    EXPECT_TRUE(r->config.cleanup_compact);
    EXPECT_FALSE(m->find_topic("t"));
    EXPECT_FALSE(*fs->exists("/data/t-0"));
}

TEST_F(LogManager, NewDefaultsReachTopicsThatDoNotOverrideThem) {
    auto m = open_log();
    ASSERT_TRUE(m->create_topic("follows", 2, {}));
    ASSERT_TRUE(m->create_topic("own", 1, {{"max.message.bytes", "5000"}}));
    auto defaults = m->defaults();
    defaults.max_message_bytes = 100;
    defaults.retention_ms = 1000;
    m->set_defaults(defaults);
    EXPECT_EQ(m->find_topic("follows")->config.max_message_bytes, 100);
    EXPECT_EQ(m->partition("follows", partition_id(1))->config()->max_message_bytes, 100);
    EXPECT_EQ(m->find_topic("own")->config.max_message_bytes, 5000);
    EXPECT_EQ(m->find_topic("own")->config.retention_ms, 1000);
    // A topic created afterwards starts from them too.
    ASSERT_TRUE(m->create_topic("later", 1, {}));
    EXPECT_EQ(m->find_topic("later")->config.max_message_bytes, 100);
}

TEST_F(LogManager, TopicsIdsAndConfigsSurviveReopen) {
    uuid id;
    {
        auto m = open_log();
        auto t = m->create_topic("orders", 3, {{"retention.ms", "1000"}});
        ASSERT_TRUE(t);
        id = t->id;
        EXPECT_FALSE(id.is_zero());
        ASSERT_TRUE(
            m->alter_config("orders", {{"retention.ms", "2000"}, {"segment.bytes", "4096"}}));
        append(*m->partition("orders", partition_id(2)), make_batch(1, 10, 0));
    }
    auto m = open_log();
    auto t = m->find_topic("orders");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->id, id);
    EXPECT_EQ(t->partitions, 3);
    EXPECT_EQ(t->config.retention_ms, 2000);
    EXPECT_EQ(t->config.segment_bytes, 4096);
    EXPECT_EQ(t->overrides.size(), 2u);
    EXPECT_EQ(m->find_topic(id)->name, "orders");
    EXPECT_EQ(m->partition("orders", partition_id(2))->log_end_offset(), offset(1));
    EXPECT_EQ(m->partition("orders", partition_id(2))->config()->retention_ms, 2000);
    EXPECT_EQ(m->partition("orders", partition_id(3)), nullptr);
    EXPECT_EQ(m->list_topics().size(), 1u);
}

TEST_F(LogManager, AlterConfigValidatesAndCanOnlyValidate) {
    auto m = open_log();
    ASSERT_TRUE(m->create_topic("t", 1, {}));
    std::string why;
    EXPECT_EQ(m->alter_config("t", {{"max.message.bytes", "-5"}}, false, &why).error(),
              errc::invalid_config);
    EXPECT_NE(why.find("max.message.bytes"), std::string::npos);
    auto dry = m->alter_config("t", {{"max.message.bytes", "5000"}}, true);
    ASSERT_TRUE(dry);
    EXPECT_EQ(dry->config.max_message_bytes, 5000);
    EXPECT_EQ(m->find_topic("t")->config.max_message_bytes, 1048588);
    EXPECT_EQ(m->alter_config("nope", {}).error(), errc::unknown_topic_or_partition);
}

TEST_F(LogManager, BrokerDefaultsReachTopicsWithoutOverrides) {
    {
        auto m = open_log();
        ASSERT_TRUE(m->create_topic("t", 1, {}));
        ASSERT_TRUE(m->create_topic("u", 1, {{"retention.ms", "5"}}));
    }
    auto o = options();
    o.defaults.retention_ms = 12345;
    auto m = open_log(o);
    EXPECT_EQ(m->find_topic("t")->config.retention_ms, 12345);
    EXPECT_EQ(m->find_topic("u")->config.retention_ms, 5);
}

TEST_F(LogManager, DeleteTopicRemovesNameAndData) {
    auto m = open_log();
    ASSERT_TRUE(m->create_topic("t", 2, {}));
    auto held = m->partition("t", partition_id(0));
    append(*held, make_batch(1, 10, 0));

    ASSERT_TRUE(m->delete_topic("t"));

    EXPECT_FALSE(m->find_topic("t"));
    EXPECT_EQ(m->partition("t", partition_id(0)), nullptr);
    log::append_options ao;
    auto b = make_batch(1, 10, 0);
    EXPECT_EQ(held->append(b, ao).error(), errc::log_closed);
    EXPECT_FALSE(*fs->exists("/data/t-0"));
    EXPECT_FALSE(*fs->exists("/data/topics/t.topic"));
    EXPECT_EQ(m->delete_topic("t").error(), errc::unknown_topic_or_partition);
    ASSERT_TRUE(m->create_topic("t", 1, {}));
    EXPECT_EQ(m->partition("t", partition_id(0))->log_end_offset(), offset(0));
}

TEST_F(LogManager, InternalTopicsAreIdempotentAndProtected) {
    auto m = open_log();
    auto a = m->create_internal_topic("__consumer_offsets", 4, {{"cleanup.policy", "compact"}});
    auto b = m->create_internal_topic("__consumer_offsets", 4, {{"cleanup.policy", "compact"}});
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->id, b->id);
    EXPECT_TRUE(a->internal);
    EXPECT_TRUE(a->config.cleanup_compact);
    EXPECT_EQ(m->delete_topic("__consumer_offsets").error(), errc::policy_violation);
    m->close();
    m.reset();
    auto again = open_log();
    EXPECT_TRUE(again->find_topic("__consumer_offsets")->internal);
    ASSERT_TRUE(again->create_topic("user", 1, {}));
    EXPECT_EQ(again->create_internal_topic("user", 1, {}).error(), errc::policy_violation);
}

TEST_F(LogManager, CreatePartitionsOnlyGrows) {
    auto m = open_log();
    ASSERT_TRUE(m->create_topic("t", 2, {}));
    EXPECT_EQ(m->create_partitions("t", 2).error(), errc::invalid_partitions);
    EXPECT_EQ(m->create_partitions("nope", 3).error(), errc::unknown_topic_or_partition);
    ASSERT_TRUE(m->create_partitions("t", 5, true));
    EXPECT_EQ(m->find_topic("t")->partitions, 2);

    ASSERT_TRUE(m->create_partitions("t", 5));

    EXPECT_EQ(m->find_topic("t")->partitions, 5);
    auto p = m->partition("t", partition_id(4));
    ASSERT_TRUE(p);
    append(*p, make_batch(1, 10, 0));
    m.reset();
    auto again = open_log();
    EXPECT_EQ(again->find_topic("t")->partitions, 5);
    EXPECT_EQ(again->partition("t", partition_id(4))->log_end_offset(), offset(1));
}

TEST_F(LogManager, FailedCreateLeavesNoHalfTopic) {
    auto m = open_log();
    fs->fail_renames("t.topic", 1, io::errno_code(EIO));
    EXPECT_FALSE(m->create_topic("t", 3, {}));
    EXPECT_FALSE(m->find_topic("t"));
    m.reset();
    auto again = open_log();
    EXPECT_FALSE(again->find_topic("t"));
    EXPECT_FALSE(*fs->exists("/data/t-0"));
}

TEST_F(LogManager, CrashBeforeTheTopicFileMeansNoTopic) {
    {
        auto m = open_log();
        ASSERT_TRUE(m->create_topic("t", 2, {}));
        // The topic file is the commit point: without it the folders are leftovers.
        ASSERT_TRUE(fs->remove("/data/topics/t.topic"));
        ASSERT_TRUE(fs->sync_dir("/data/topics"));
        fs = fs->crash_copy();
    }
    auto m = open_log();
    EXPECT_FALSE(m->find_topic("t"));
    EXPECT_FALSE(*fs->exists("/data/t-0"));
    EXPECT_FALSE(*fs->exists("/data/t-1"));
}

TEST_F(LogManager, FolderOfAnEarlierTopicWithTheSameNameIsNotAdopted) {
    {
        auto m = open_log();
        ASSERT_TRUE(m->create_topic("t", 1, {}));
        append(*m->partition("t", partition_id(0)), make_batch(3, 10, 0));
        m->close();
    }
    // As if the topic was deleted and re-created while its old folder survived.
    log::topic_record rec{"t", uuid::random(), 1, false, {}};
    auto text = log::encode_topic_record(rec);
    ASSERT_TRUE(io::write_file_atomic(*fs, "/data/topics/t.topic", protocol::as_bytes(text)));
    auto m = open_log();
    EXPECT_EQ(m->find_topic("t")->id, rec.id);
    EXPECT_EQ(m->partition("t", partition_id(0))->log_end_offset(), offset(0));
}

TEST_F(LogManager, DamagedTopicFileStopsTheOpen) {
    {
        auto m = open_log();
        ASSERT_TRUE(m->create_topic("t", 1, {}));
    }
    auto f = fs->open("/data/topics/t.topic", io::open_mode::read_write);
    std::byte x{'Z'};
    ASSERT_TRUE((*f)->write_at({&x, 1}, 12));
    auto m = log::log_manager::open(options());
    ASSERT_FALSE(m);
    EXPECT_EQ(m.error(), errc::storage_error);
}

TEST_F(LogManager, CleanShutdownIsRecordedAndForgottenOnOpen) {
    {
        auto m = open_log();
        ASSERT_TRUE(m->create_topic("t", 1, {}));
        m->close();
        EXPECT_TRUE(*fs->exists("/data/.clean_shutdown"));
    }
    auto m = open_log();
    EXPECT_FALSE(*fs->exists("/data/.clean_shutdown"));
}

TEST_F(LogManager, ThousandsOfEmptyPartitionsAreCheap) {
    auto o = options();
    o.max_open_files = 64;
    auto m = open_log(o);
    const int n = 2000;
    auto before = mallinfo2().uordblks;
    ASSERT_TRUE(m->create_topic("wide", n, {}));
    auto after = mallinfo2().uordblks;
    // The in-memory file system's own bytes (tiny files) are included: an upper bound.
    double per_partition = static_cast<double>(after - before) / n;
    EXPECT_LT(per_partition, 100 * 1024);
    EXPECT_LE(m->open_files(), 64u);
    RecordProperty("bytes_per_empty_partition", static_cast<int>(per_partition));
    m->close();
    m.reset();
    auto again = open_log(o);
    EXPECT_EQ(again->find_topic("wide")->partitions, n);
    EXPECT_LE(again->open_files(), 64u);
}

TEST_F(LogManager, ClosingManyIdlePartitionsNeedsNoFsyncPerPartition) {
    auto m = open_log();
    ASSERT_TRUE(m->create_topic("idle", 200, {}));
    ASSERT_TRUE(m->create_topic("busy", 1, {}));
    append_durably(*m->partition("busy", partition_id(0)), make_batch(3, 10, 0), clock.now());
    const auto before = fs->sync_count();

    m->close();

    // The busy partition's indexes and the clean-shutdown marker; nothing per idle partition.
    EXPECT_LE(fs->sync_count() - before, 10u);
    auto again = open_log();
    EXPECT_EQ(again->partitions("idle").size(), 200u);
    EXPECT_EQ(again->partition("busy", partition_id(0))->log_end_offset(), offset(3));
    EXPECT_EQ(again->partition("busy", partition_id(0))->recovery().indexes_rebuilt, 0);
}

}  // namespace
}  // namespace sluice::backend::test
