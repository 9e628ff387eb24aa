// The declare step of every Kafka API: what a sample request touches, as the policy chain
// gets it (gateway/kafka/accesses.h). One test per API, in SLUICE_KAFKA_APIS order.
#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "gateway/kafka/accesses.h"
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {
namespace {

using op = auth::acl_operation;
using rt = auth::resource_type;
constexpr auto filter = on_denial::filter;
constexpr auto refuse = on_denial::refuse;
constexpr std::string_view cluster_name = auth::cluster_resource_name;

kafka_access allow(op o, rt t, std::string_view name, on_denial denial = refuse,
                   std::uint16_t only_if = no_access, std::uint16_t unless = no_access,
                   also_passes alternative = also_passes::nothing) {
    return kafka_access{o, t, name, denial, alternative, only_if, unless};
}
kafka_access later(op o, rt t) {
    kafka_access a{o, t};
    a.later = true;
    return a;
}
kafka_access none() {
    kafka_access a;
    a.none = true;
    return a;
}

template <typename H>
std::vector<kafka_access> declared(std::int16_t version, const typename H::request& req) {
    access_list out;
    H::declare(version, req, out);
    return out.items();
}

using list = std::vector<kafka_access>;

TEST(KafkaDeclare, ProduceWritesEachTopic) {
    produce_handler::request req;
    req.topic_data.resize(2);
    req.topic_data[0].name = "a";
    req.topic_data[1].name = "b";
    EXPECT_EQ(declared<produce_handler>(9, req),
              (list{allow(op::write, rt::topic, "a"), allow(op::write, rt::topic, "b")}));
}

TEST(KafkaDeclare, ProduceChecksTopicsOnlyAfterTheTransactionalId) {
    produce_handler::request req;
    req.transactional_id = "tx";
    req.topic_data.resize(1);
    req.topic_data[0].name = "a";
    EXPECT_EQ(declared<produce_handler>(9, req),
              (list{allow(op::write, rt::transactional_id, "tx"),
                    allow(op::write, rt::topic, "a", refuse, 0)}));
}

TEST(KafkaDeclare, FetchReadsEachTopicByName) {
    fetch_handler::request req;
    req.topics.resize(2);
    req.topics[0].topic = "a";
    req.topics[1].topic = "b";
    EXPECT_EQ(declared<fetch_handler>(12, req),
              (list{allow(op::read, rt::topic, "a"), allow(op::read, rt::topic, "b")}));
}

TEST(KafkaDeclare, FetchByTopicIdDecidesOnTheBackendsNames) {
    fetch_handler::request req;
    req.topics.resize(1);
    EXPECT_EQ(declared<fetch_handler>(13, req), (list{later(op::read, rt::topic)}));
}

TEST(KafkaDeclare, FetchSessionContinuationDeclaresNothing) {
    fetch_handler::request req;
    req.session_id = 7;
    req.topics.resize(1);
    req.topics[0].topic = "a";
    EXPECT_TRUE(declared<fetch_handler>(12, req).empty());
}

TEST(KafkaDeclare, ListOffsetsDescribesEachTopic) {
    list_offsets_handler::request req;
    req.topics.resize(1);
    req.topics[0].name = "a";
    EXPECT_EQ(declared<list_offsets_handler>(5, req), (list{allow(op::describe, rt::topic, "a")}));
}

TEST(KafkaDeclare, MetadataDescribesNamedTopics) {
    metadata_handler::request req;
    auto& topics = req.topics.emplace();
    topics.resize(2);
    topics[0].name = "a";
    topics[1].name = std::nullopt;
    topics[1].topic_id = uuid::random();
    EXPECT_EQ(declared<metadata_handler>(12, req),
              (list{allow(op::describe, rt::topic, "a"), later(op::describe, rt::topic)}));
}

TEST(KafkaDeclare, MetadataListingEveryTopicDeclaresNothing) {
    metadata_handler::request all;
    all.topics = std::nullopt;
    EXPECT_TRUE(declared<metadata_handler>(9, all).empty());
    metadata_handler::request v0;
    v0.topics.emplace();
    EXPECT_TRUE(declared<metadata_handler>(0, v0).empty());
}

TEST(KafkaDeclare, OffsetCommitReadsTopicsOnlyAfterTheGroup) {
    offset_commit_handler::request req;
    req.group_id = "g";
    req.topics.resize(1);
    req.topics[0].name = "a";
    EXPECT_EQ(declared<offset_commit_handler>(8, req),
              (list{allow(op::read, rt::group, "g"), allow(op::read, rt::topic, "a", refuse, 0)}));
}

TEST(KafkaDeclare, OffsetFetchDescribesTheGroup) {
    offset_fetch_handler::request req;
    req.group_id = "g";
    EXPECT_EQ(declared<offset_fetch_handler>(7, req), (list{allow(op::describe, rt::group, "g")}));
}

TEST(KafkaDeclare, OffsetFetchV8DescribesEachGroup) {
    offset_fetch_handler::request req;
    req.groups.resize(2);
    req.groups[0].group_id = "g1";
    req.groups[1].group_id = "g2";
    EXPECT_EQ(declared<offset_fetch_handler>(8, req),
              (list{allow(op::describe, rt::group, "g1"), allow(op::describe, rt::group, "g2")}));
}

TEST(KafkaDeclare, FindCoordinatorDescribesTheKey) {
    find_coordinator_handler::request group;
    group.key_ = "g";
    group.key_type = 0;
    EXPECT_EQ(declared<find_coordinator_handler>(3, group),
              (list{allow(op::describe, rt::group, "g")}));
    find_coordinator_handler::request txn;
    txn.key_type = 1;
    txn.coordinator_keys = {"t1", "t2"};
    EXPECT_EQ(declared<find_coordinator_handler>(4, txn),
              (list{allow(op::describe, rt::transactional_id, "t1"),
                    allow(op::describe, rt::transactional_id, "t2")}));
    find_coordinator_handler::request unknown;
    unknown.key_type = 5;
    unknown.key_ = "x";
    EXPECT_TRUE(declared<find_coordinator_handler>(3, unknown).empty());
}

TEST(KafkaDeclare, ClassicGroupApisReadTheGroup) {
    const list read_g{allow(op::read, rt::group, "g")};
    join_group_handler::request join;
    join.group_id = "g";
    EXPECT_EQ(declared<join_group_handler>(5, join), read_g);
    heartbeat_handler::request beat;
    beat.group_id = "g";
    EXPECT_EQ(declared<heartbeat_handler>(3, beat), read_g);
    leave_group_handler::request leave;
    leave.group_id = "g";
    EXPECT_EQ(declared<leave_group_handler>(3, leave), read_g);
    sync_group_handler::request sync;
    sync.group_id = "g";
    EXPECT_EQ(declared<sync_group_handler>(3, sync), read_g);
}

TEST(KafkaDeclare, DescribeGroupsDescribesEachGroup) {
    describe_groups_handler::request req;
    req.groups = {"g1", "g2"};
    EXPECT_EQ(declared<describe_groups_handler>(5, req),
              (list{allow(op::describe, rt::group, "g1"), allow(op::describe, rt::group, "g2")}));
}

TEST(KafkaDeclare, ListGroupsAsksForTheClusterQuietly) {
    EXPECT_EQ(declared<list_groups_handler>(4, {}),
              (list{allow(op::describe, rt::cluster, cluster_name, filter)}));
}

TEST(KafkaDeclare, LoginApisDeclareNothing) {
    EXPECT_TRUE(declared<sasl_handshake_handler>(1, {}).empty());
    EXPECT_TRUE(declared<api_versions_handler>(3, {}).empty());
    EXPECT_TRUE(declared<sasl_authenticate_handler>(2, {}).empty());
}

TEST(KafkaDeclare, CreateTopicsAsksTheClusterFirst) {
    create_topics_handler::request req;
    req.topics.resize(3);
    req.topics[0].name = "a";
    req.topics[1].name = "b";
    req.topics[2].name = "b";
    EXPECT_EQ(declared<create_topics_handler>(5, req),
              (list{allow(op::create, rt::topic, "a", refuse, no_access, no_access,
                          also_passes::cluster),
                    none(), none()}));
}

TEST(KafkaDeclare, DeleteTopicsDeletesEachTopic) {
    delete_topics_handler::request old;
    old.topic_names = {"a"};
    EXPECT_EQ(declared<delete_topics_handler>(5, old), (list{allow(op::remove, rt::topic, "a")}));
    delete_topics_handler::request by_id;
    by_id.topics.resize(2);
    by_id.topics[0].name = "a";
    EXPECT_EQ(declared<delete_topics_handler>(6, by_id),
              (list{allow(op::remove, rt::topic, "a"), later(op::remove, rt::topic)}));
}

TEST(KafkaDeclare, DeleteRecordsDeletesEachTopic) {
    delete_records_handler::request req;
    req.topics.resize(1);
    req.topics[0].name = "a";
    EXPECT_EQ(declared<delete_records_handler>(2, req), (list{allow(op::remove, rt::topic, "a")}));
}

TEST(KafkaDeclare, InitProducerIdWritesTheTransactionalId) {
    init_producer_id_handler::request req;
    req.transactional_id = "tx";
    req.producer_id = producer_id(-1);
    req.producer_epoch = producer_epoch(-1);
    EXPECT_EQ(declared<init_producer_id_handler>(4, req),
              (list{allow(op::write, rt::transactional_id, "tx")}));
}

TEST(KafkaDeclare, InitProducerIdWithoutOneNeedsIdempotentWriteOrSomeTopic) {
    init_producer_id_handler::request req;
    req.transactional_id = std::nullopt;
    EXPECT_EQ(declared<init_producer_id_handler>(4, req),
              (list{allow(op::idempotent_write, rt::cluster, cluster_name, refuse, no_access,
                          no_access, also_passes::write_on_any_topic)}));
}

TEST(KafkaDeclare, InitProducerIdInvalidDeclaresNothing) {
    init_producer_id_handler::request req;
    req.transactional_id = "tx";
    req.producer_id = producer_id(5);
    req.producer_epoch = producer_epoch(-1);
    EXPECT_TRUE(declared<init_producer_id_handler>(4, req).empty());
}

TEST(KafkaDeclare, OffsetForLeaderEpochLetsAFollowerThrough) {
    offset_for_leader_epoch_handler::request req;
    req.topics.resize(1);
    req.topics[0].topic = "a";
    EXPECT_EQ(declared<offset_for_leader_epoch_handler>(3, req),
              (list{allow(op::cluster_action, rt::cluster, cluster_name, filter),
                    allow(op::describe, rt::topic, "a", refuse, no_access, 0)}));
}

TEST(KafkaDeclare, AddPartitionsToTxnWritesIdThenTopics) {
    add_partitions_to_txn_handler::request old;
    old.v3_and_below_transactional_id = "tx";
    old.v3_and_below_topics.resize(1);
    old.v3_and_below_topics[0].name = "a";
    EXPECT_EQ(declared<add_partitions_to_txn_handler>(3, old),
              (list{allow(op::write, rt::transactional_id, "tx"),
                    allow(op::write, rt::topic, "a", refuse, 0)}));
    add_partitions_to_txn_handler::request batch;
    batch.transactions.resize(2);
    batch.transactions[0].transactional_id = "t1";
    batch.transactions[0].topics.resize(1);
    batch.transactions[0].topics[0].name = "a";
    batch.transactions[1].transactional_id = "t2";
    batch.transactions[1].topics.resize(1);
    batch.transactions[1].topics[0].name = "b";
    EXPECT_EQ(declared<add_partitions_to_txn_handler>(4, batch),
              (list{allow(op::write, rt::transactional_id, "t1"),
                    allow(op::write, rt::topic, "a", refuse, 0),
                    allow(op::write, rt::transactional_id, "t2"),
                    allow(op::write, rt::topic, "b", refuse, 2)}));
}

TEST(KafkaDeclare, AddOffsetsToTxnWritesIdThenReadsGroup) {
    add_offsets_to_txn_handler::request req;
    req.transactional_id = "tx";
    req.group_id = "g";
    EXPECT_EQ(declared<add_offsets_to_txn_handler>(3, req),
              (list{allow(op::write, rt::transactional_id, "tx"),
                    allow(op::read, rt::group, "g", refuse, 0)}));
    req.group_id.clear();
    EXPECT_TRUE(declared<add_offsets_to_txn_handler>(3, req).empty());
}

TEST(KafkaDeclare, EndTxnWritesTheTransactionalId) {
    end_txn_handler::request req;
    req.transactional_id = "tx";
    EXPECT_EQ(declared<end_txn_handler>(3, req),
              (list{allow(op::write, rt::transactional_id, "tx")}));
}

TEST(KafkaDeclare, TxnOffsetCommitReadsTopicsThenIdThenGroup) {
    txn_offset_commit_handler::request req;
    req.transactional_id = "tx";
    req.group_id = "g";
    req.topics.resize(1);
    req.topics[0].name = "a";
    EXPECT_EQ(declared<txn_offset_commit_handler>(3, req),
              (list{allow(op::read, rt::topic, "a"),
                    allow(op::write, rt::transactional_id, "tx"),
                    allow(op::read, rt::group, "g", refuse, 1)}));
}

TEST(KafkaDeclare, AclApisNeedTheCluster) {
    EXPECT_EQ(declared<describe_acls_handler>(2, {}),
              (list{allow(op::describe, rt::cluster, cluster_name)}));
    EXPECT_EQ(declared<create_acls_handler>(2, {}),
              (list{allow(op::alter, rt::cluster, cluster_name)}));
    EXPECT_EQ(declared<delete_acls_handler>(2, {}),
              (list{allow(op::alter, rt::cluster, cluster_name)}));
}

TEST(KafkaDeclare, ConfigApisCheckEachResourceByType) {
    describe_configs_handler::request req;
    req.resources.resize(4);
    req.resources[0].resource_type = 2;  // topic
    req.resources[0].resource_name = "a";
    req.resources[1].resource_type = 4;  // broker
    req.resources[1].resource_name = "1";
    req.resources[2].resource_type = 32;  // group
    req.resources[2].resource_name = "g";
    req.resources[3].resource_type = 3;  // not a config resource
    EXPECT_EQ(declared<describe_configs_handler>(3, req),
              (list{allow(op::describe_configs, rt::topic, "a"),
                    allow(op::describe_configs, rt::cluster, cluster_name),
                    allow(op::describe_configs, rt::group, "g"), none()}));
    alter_configs_handler::request alter;
    alter.resources.resize(1);
    alter.resources[0].resource_type = 8;  // broker logger
    EXPECT_EQ(declared<alter_configs_handler>(1, alter),
              (list{allow(op::alter_configs, rt::cluster, cluster_name)}));
    incremental_alter_configs_handler::request inc;
    inc.resources.resize(1);
    inc.resources[0].resource_type = 2;
    inc.resources[0].resource_name = "a";
    EXPECT_EQ(declared<incremental_alter_configs_handler>(1, inc),
              (list{allow(op::alter_configs, rt::topic, "a")}));
}

TEST(KafkaDeclare, DescribeLogDirsDescribesTheCluster) {
    EXPECT_EQ(declared<describe_log_dirs_handler>(1, {}),
              (list{allow(op::describe, rt::cluster, cluster_name)}));
}

TEST(KafkaDeclare, CreatePartitionsAltersEachTopicOnce) {
    create_partitions_handler::request req;
    req.topics.resize(2);
    req.topics[0].name = "a";
    req.topics[1].name = "a";
    EXPECT_EQ(declared<create_partitions_handler>(2, req),
              (list{allow(op::alter, rt::topic, "a"), none()}));
}

TEST(KafkaDeclare, DeleteGroupsDeletesEachGroup) {
    delete_groups_handler::request req;
    req.groups_names = {"g"};
    EXPECT_EQ(declared<delete_groups_handler>(1, req), (list{allow(op::remove, rt::group, "g")}));
}

TEST(KafkaDeclare, OffsetDeleteReadsTopicsOnlyAfterTheGroup) {
    offset_delete_handler::request req;
    req.group_id = "g";
    req.topics.resize(1);
    req.topics[0].name = "a";
    EXPECT_EQ(declared<offset_delete_handler>(0, req),
              (list{allow(op::remove, rt::group, "g"), allow(op::read, rt::topic, "a", refuse, 0)}));
}

TEST(KafkaDeclare, ClientQuotaApisNeedTheClusterConfigs) {
    EXPECT_EQ(declared<describe_client_quotas_handler>(1, {}),
              (list{allow(op::describe_configs, rt::cluster, cluster_name)}));
    EXPECT_EQ(declared<alter_client_quotas_handler>(1, {}),
              (list{allow(op::alter_configs, rt::cluster, cluster_name)}));
}

TEST(KafkaDeclare, ScramCredentialApisNeedTheCluster) {
    EXPECT_EQ(declared<describe_user_scram_credentials_handler>(0, {}),
              (list{allow(op::describe, rt::cluster, cluster_name)}));
    EXPECT_EQ(declared<alter_user_scram_credentials_handler>(0, {}),
              (list{allow(op::alter, rt::cluster, cluster_name)}));
}

TEST(KafkaDeclare, DescribeClusterAsksOnlyForAuthorizedOperations) {
    describe_cluster_handler::request req;
    req.endpoint_type = 1;
    EXPECT_TRUE(declared<describe_cluster_handler>(1, req).empty());
    req.include_cluster_authorized_operations = true;
    EXPECT_EQ(declared<describe_cluster_handler>(1, req),
              (list{allow(op::describe, rt::cluster, cluster_name)}));
}

TEST(KafkaDeclare, DescribeProducersReadsEachTopic) {
    describe_producers_handler::request req;
    req.topics.resize(1);
    req.topics[0].name = "a";
    EXPECT_EQ(declared<describe_producers_handler>(0, req), (list{allow(op::read, rt::topic, "a")}));
}

TEST(KafkaDeclare, DescribeTransactionsDescribesEachId) {
    describe_transactions_handler::request req;
    req.transactional_ids = {"tx"};
    EXPECT_EQ(declared<describe_transactions_handler>(0, req),
              (list{allow(op::describe, rt::transactional_id, "tx")}));
}

TEST(KafkaDeclare, ListTransactionsDeclaresNothing) {
    EXPECT_TRUE(declared<list_transactions_handler>(1, {}).empty());
}

TEST(KafkaDeclare, ConsumerGroupHeartbeatStopsAtTheFirstRefusal) {
    consumer_group_heartbeat_handler::request req;
    req.group_id = "g";
    req.subscribed_topic_names = std::vector<std::string>{"a", "b"};
    EXPECT_EQ(declared<consumer_group_heartbeat_handler>(0, req),
              (list{allow(op::read, rt::group, "g"),
                    allow(op::describe, rt::topic, "a", refuse, 0),
                    allow(op::describe, rt::topic, "b", refuse, 1)}));
}

TEST(KafkaDeclare, ConsumerGroupDescribeDescribesEachGroup) {
    consumer_group_describe_handler::request req;
    req.group_ids = {"g"};
    EXPECT_EQ(declared<consumer_group_describe_handler>(0, req),
              (list{allow(op::describe, rt::group, "g")}));
}

TEST(KafkaDeclare, EveryRegisteredApiHasATestHere) {
    // 45 APIs in SLUICE_KAFKA_APIS; a new one needs its declare test above.
    EXPECT_EQ(handler_registry().size(), 45u);
}

}  // namespace
}  // namespace sluice::gateway
