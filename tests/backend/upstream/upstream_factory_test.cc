// The client-level suite's upstream factory (tests/backend/contract/upstream_client_factory.h)
// works: its admin makes topics in the mock (which has no CreateTopics) after a broker's checks,
// and its producer and admin reach them.
#include <gtest/gtest.h>

#include "tests/backend/contract/client_fixture.h"
#include "tests/backend/contract/upstream_client_factory.h"

namespace sluice::backend::contract {
namespace {

using UpstreamFactory = ClientContract<upstream_client_factory>;

TEST_F(UpstreamFactory, CreatesTopicsTheProducerAndAdminReach) {
    api::new_topic spec;
    spec.name = topic_name(unique_topic("factory"));
    spec.partitions = 3;
    auto created = run(admin().create_topic(spec));
    ASSERT_TRUE(created) << created.error().text();
    EXPECT_EQ(created->partitions.size(), 3u);

    auto again = run(admin().create_topic(spec));
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().reason(), api::errc::topic_already_exists);

    api::outgoing_record r;
    r.value = "v";
    r.partition = 2;
    auto sent = run(producer().send(spec.name, {r}, {}));
    ASSERT_TRUE(sent) << sent.error().text();
    EXPECT_EQ((*sent)[0].partition, 2);
    EXPECT_EQ((*sent)[0].offset, 0);
}

TEST_F(UpstreamFactory, RefusesWhatABrokerRefuses) {
    api::new_topic bad_name;
    bad_name.name = topic_name("no spaces allowed");
    auto a = run(admin().create_topic(bad_name));
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().reason(), api::errc::invalid_topic_name);

    api::new_topic no_partitions;
    no_partitions.name = topic_name(unique_topic("zero"));
    no_partitions.partitions = 0;
    auto b = run(admin().create_topic(no_partitions));
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().reason(), api::errc::invalid_partitions);
}

}  // namespace
}  // namespace sluice::backend::contract
