// Contract: the one error shape of backend/api (common.h) where each call answers it.
// `backend_result<T>` for a call that gives a value or fails (topics.h, queues.h, records.h
// delete_records per request, transactions.h, groups.h heartbeat), and a `backend_error` inside
// an answer for each part that fails on its own, empty when that part succeeded (records.h per
// partition, groups.h per group, member and partition, queues.h per message and handle). Every
// code a backend answers means an api::errc (api::reason), never errc::unknown, and says
// something (its message, or the client message the error carries).
#include <algorithm>

#include "tests/backend/contract/contract_backends.h"

namespace sluice::backend::contract {
namespace {

template <typename F>
class ErrorsContract : public BackendContract<F> {
protected:
    /// An error a backend answered: it means `want` in api terms and says something.
    void expect_meaning(const api::backend_error& e, api::errc want, const char* where) {
        ASSERT_TRUE(e) << where << ": no error";
        EXPECT_EQ(e.reason(), want) << where << ": " << e.text();
        EXPECT_NE(e.reason(), api::errc::unknown) << where;
        EXPECT_FALSE(e.code.message().empty()) << where;
        EXPECT_FALSE(e.text().empty()) << where;
    }
};
TYPED_TEST_SUITE(ErrorsContract, backend_factories, factory_names);

TYPED_TEST(ErrorsContract, ResultCarriesTheCodeAndAMessage) {
    auto r = this->try_create("t", 1, {{"cleanup.policy", "sometimes"}});
    ASSERT_FALSE(r);
    this->expect_meaning(r.error(), api::errc::invalid_config, "create");
    // The message for the client names the bad key (a front shows it as is).
    EXPECT_NE(r.error().message.find("cleanup.policy"), std::string::npos) << r.error().message;

    auto removed = this->run(this->topics().remove(topic_name("absent")));
    ASSERT_FALSE(removed);
    this->expect_meaning(removed.error(), api::errc::unknown_topic_or_partition, "remove");
}

TYPED_TEST(ErrorsContract, ResultPerRequest) {
    this->create_topic("t", 1);
    this->produce_values("t", 0, {"a"});
    std::vector<api::delete_records_request> reqs;
    reqs.push_back({topic_name("absent"), partition_id(0), offset(0)});
    reqs.push_back({topic_name("t"), partition_id(0), offset(1)});
    reqs.push_back({topic_name("t"), partition_id(3), offset(0)});
    auto r = this->run(this->records().delete_records(std::move(reqs)));
    ASSERT_EQ(r.size(), 3u);
    ASSERT_FALSE(r[0]);
    this->expect_meaning(r[0].error(), api::errc::unknown_topic_or_partition, "unknown topic");
    // One failure does not fail the others.
    ASSERT_TRUE(r[1]);
    EXPECT_EQ(r[1]->value, 1);
    ASSERT_FALSE(r[2]);
    this->expect_meaning(r[2].error(), api::errc::unknown_topic_or_partition, "unknown partition");
}

TYPED_TEST(ErrorsContract, ProduceAnswersErrorsPerPartition) {
    this->create_topic("t", 1);
    auto good = make_batch({"ok"});
    auto bad = make_batch({"lost"});
    auto absent = make_batch({"nowhere"});
    api::produce_request req;
    api::produce_topic t;
    t.topic = topic_name("t");
    t.partitions.push_back({partition_id(0), good.mutable_view()});
    t.partitions.push_back({partition_id(9), bad.mutable_view()});
    req.topics.push_back(std::move(t));
    api::produce_topic u;
    u.topic = topic_name("absent");
    u.partitions.push_back({partition_id(0), absent.mutable_view()});
    req.topics.push_back(std::move(u));
    auto r = this->run(this->records().produce(std::move(req)));
    ASSERT_EQ(r.topics.size(), 2u);
    ASSERT_EQ(r.topics[0].partitions.size(), 2u);
    EXPECT_FALSE(r.topics[0].partitions[0].error);
    EXPECT_EQ(r.topics[0].partitions[0].base_offset.value, 0);
    this->expect_meaning(r.topics[0].partitions[1].error, api::errc::unknown_topic_or_partition,
                         "partition 9");
    EXPECT_EQ(r.topics[1].topic, topic_name("absent"));
    ASSERT_EQ(r.topics[1].partitions.size(), 1u);
    this->expect_meaning(r.topics[1].partitions[0].error, api::errc::unknown_topic_or_partition,
                         "unknown topic");
}

TYPED_TEST(ErrorsContract, FetchAnswersErrorsPerPartition) {
    this->create_topic("t", 1);
    this->produce_values("t", 0, {"a"});
    api::fetch_request req;
    api::fetch_topic t;
    t.topic = topic_name("t");
    t.partitions.push_back({partition_id(0), offset(0), 1048576});
    t.partitions.push_back({partition_id(0), offset(50), 1048576});
    t.partitions.push_back({partition_id(4), offset(0), 1048576});
    req.topics.push_back(std::move(t));
    req.min_bytes = 0;
    auto r = this->run(this->records().fetch(std::move(req)));
    ASSERT_EQ(r.topics.size(), 1u);
    ASSERT_EQ(r.topics[0].partitions.size(), 3u);
    EXPECT_FALSE(r.topics[0].partitions[0].error);
    EXPECT_EQ(values_of(decode_fetched(r.topics[0].partitions[0])),
              (std::vector<std::string>{"a"}));
    this->expect_meaning(r.topics[0].partitions[1].error, api::errc::offset_out_of_range,
                         "offset 50");
    this->expect_meaning(r.topics[0].partitions[2].error, api::errc::unknown_topic_or_partition,
                         "partition 4");
}

TYPED_TEST(ErrorsContract, WritingToAnInternalTopicIsRefused) {
    this->create_topic("t", 1);
    api::offset_commit_request commit;
    commit.group_id = group_id("g");
    commit.topics.push_back({topic_name("t"), {{partition_id(0), offset(0), -1, {}}}});
    this->run(this->groups().commit_offsets(std::move(commit)));
    auto all = this->run(this->topics().list());
    auto internal = std::find_if(all.begin(), all.end(), [](const auto& d) { return d.internal; });
    if (internal == all.end()) {
        GTEST_SKIP() << "the backend lists no internal topic";
    }
    auto b = make_batch({"forged"});
    auto r = this->produce(internal->name.value, 0, b);
    this->expect_meaning(r.error, api::errc::internal_topic, "produce to an internal topic");
}

TYPED_TEST(ErrorsContract, GroupAnswersCarryTheirCodes) {
    // A group-level error in a struct (leave), a result without a value (heartbeat), an error
    // per group (delete) and per partition (commit).
    auto leave = this->run(this->groups().leave_group(
        group_id("absent"), {api::leave_member{"m", std::nullopt, std::nullopt}}));
    this->expect_meaning(leave.error, api::errc::unknown_member_id, "leave");

    api::heartbeat_request hb;
    hb.group_id = group_id("absent");
    hb.generation_id = 1;
    hb.member_id = "m";
    auto beat = this->run(this->groups().heartbeat(hb));
    ASSERT_FALSE(beat);
    this->expect_meaning(beat.error(), api::errc::unknown_member_id, "heartbeat");

    auto del = this->run(this->groups().delete_groups({group_id("absent")}));
    ASSERT_EQ(del.size(), 1u);
    this->expect_meaning(del[0].error, api::errc::group_id_not_found, "delete");

    this->create_topic("t", 1);
    api::offset_commit_request commit;
    commit.group_id = group_id("g");
    commit.topics.push_back(
        {topic_name("t"), {{partition_id(0), offset(1), -1, std::string(100000, 'x')}}});
    auto c = this->run(this->groups().commit_offsets(std::move(commit)));
    ASSERT_EQ(c.topics.size(), 1u);
    ASSERT_EQ(c.topics[0].partitions.size(), 1u);
    this->expect_meaning(c.topics[0].partitions[0].error, api::errc::offset_metadata_too_large,
                         "commit");
}

TYPED_TEST(ErrorsContract, AnEmptyErrorInAnAnswerIsSuccess) {
    if (this->queues() == nullptr) {
        GTEST_SKIP() << "the backend provides no queues interface";
    }
    auto& q = *this->queues();
    auto made = this->run(q.create_queue(api::queue_name("jobs"), {}, {}));
    ASSERT_TRUE(made) << made.error().message;
    std::vector<api::outgoing_message> msgs(2);
    msgs[0].body = "fine";
    msgs[1].body = std::string("bad\x01", 4);  // outside SQS's allowed characters
    auto r = this->run(q.send_messages(api::queue_name("jobs"), std::move(msgs)));
    // The call succeeds; each message has its own answer.
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->size(), 2u);
    EXPECT_FALSE((*r)[0].error);
    EXPECT_FALSE((*r)[0].error.code);
    EXPECT_TRUE((*r)[0].error.message.empty());
    EXPECT_FALSE((*r)[0].message_id.empty());
    this->expect_meaning((*r)[1].error, api::errc::invalid_message_contents, "send");
    EXPECT_FALSE((*r)[1].error.message.empty());
    EXPECT_TRUE((*r)[1].message_id.empty());

    // A forged receipt handle is refused per handle, the call itself succeeds.
    auto del = this->run(q.delete_messages(api::queue_name("jobs"), {"forged-handle"}));
    ASSERT_TRUE(del) << del.error().message;
    ASSERT_EQ(del->size(), 1u);
    this->expect_meaning((*del)[0], api::errc::receipt_handle_invalid, "delete");
}

TYPED_TEST(ErrorsContract, TransactionErrorsAreResults) {
    // A value or an error (init, describe_producers), an error per partition (add_partitions),
    // a result without a value (add_offsets).
    if (this->transactions() == nullptr) {
        GTEST_SKIP() << "the backend provides no transactions interface";
    }
    auto& tx = *this->transactions();
    auto init = this->run(tx.init_producer_id(transactional_id("tx"), -5,
                                              {no_producer_id, no_producer_epoch}));
    ASSERT_FALSE(init);
    this->expect_meaning(init.error(), api::errc::invalid_transaction_timeout, "init");

    auto producers = this->run(tx.describe_producers(topic_name("absent"), partition_id(0)));
    ASSERT_FALSE(producers);
    this->expect_meaning(producers.error(), api::errc::unknown_topic_or_partition,
                         "describe_producers");

    // A producer of another transactional id (none is open): the mapping is refused.
    const api::producer_identity stranger{producer_id(424242), producer_epoch(0)};
    auto added = this->run(tx.add_partitions(transactional_id("unknown-tx"), stranger,
                                             {api::txn_partition{topic_name("t"), partition_id(0)}},
                                             false));
    ASSERT_EQ(added.size(), 1u);
    this->expect_meaning(added[0], api::errc::invalid_producer_id_mapping, "add_partitions");
    auto offsets = this->run(tx.add_offsets(transactional_id("unknown-tx"), stranger, group_id("g")));
    ASSERT_FALSE(offsets);
    this->expect_meaning(offsets.error(), api::errc::invalid_producer_id_mapping, "add_offsets");
}

}  // namespace
}  // namespace sluice::backend::contract
