// Queue attributes: values are checked and normalised; unknown and read-only names refused.
#include <gtest/gtest.h>

#include "backend/api/errc.h"
#include "backend/queue/message_codec.h"
#include "backend/queue/policy.h"
#include "backend/queue/queue_config.h"

namespace sluice::backend::queue {
namespace {

api::backend_result<queue_config> apply(const api::attribute_map& a, bool fifo = false) {
    queue_config base;
    base.fifo = fifo;
    api::attribute_map stored;
    return apply_attributes(base, a, true, arn_scheme{}, stored);
}

api::errc error_of(const api::backend_result<queue_config>& r) {
    return r ? api::errc::unknown : api::reason(r.error().code);
}

TEST(QueueConfig, NumericAttributesAreRangeChecked) {
    EXPECT_EQ(apply({{"VisibilityTimeout", "43200"}})->visibility_timeout_s, 43200);
    EXPECT_EQ(error_of(apply({{"VisibilityTimeout", "43201"}})), api::errc::invalid_attribute_value);
    EXPECT_EQ(error_of(apply({{"DelaySeconds", "-1"}})), api::errc::invalid_attribute_value);
    EXPECT_EQ(error_of(apply({{"MessageRetentionPeriod", "59"}})), api::errc::invalid_attribute_value);
    EXPECT_EQ(error_of(apply({{"MaximumMessageSize", "1048577"}})), api::errc::invalid_attribute_value);
    EXPECT_EQ(error_of(apply({{"ReceiveMessageWaitTimeSeconds", "x"}})),
              api::errc::invalid_attribute_value);
}

TEST(QueueConfig, UnknownAndReadOnlyNamesAreInvalidNames) {
    EXPECT_EQ(error_of(apply({{"Colour", "blue"}})), api::errc::invalid_attribute_name);
    EXPECT_EQ(error_of(apply({{"QueueArn", "x"}})), api::errc::invalid_attribute_name);
    EXPECT_EQ(error_of(apply({{"ContentBasedDeduplication", "true"}})),
              api::errc::invalid_attribute_name);  // standard queue
    EXPECT_TRUE(apply({{"ContentBasedDeduplication", "true"}}, true));
}

TEST(QueueConfig, RedrivePolicyIsParsedAndNormalised) {
    queue_config base;
    api::attribute_map stored;
    auto c = apply_attributes(
        base, {{"RedrivePolicy", R"({"maxReceiveCount":"3","deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq"})"}},
        false, arn_scheme{}, stored);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->redrive->dead_letter_queue, "dlq");
    EXPECT_EQ(c->redrive->max_receive_count, 3);
    EXPECT_EQ(stored["RedrivePolicy"],
              R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":3})");
    EXPECT_EQ(error_of(apply({{"RedrivePolicy", R"({"maxReceiveCount":0,"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq"})"}})),
              api::errc::invalid_attribute_value);
    EXPECT_EQ(error_of(apply({{"RedrivePolicy", "{not json"}})), api::errc::invalid_attribute_value);
}

TEST(QueueConfig, FifoQueueMustMatchTheName) {
    EXPECT_FALSE(apply({{"FifoQueue", "true"}}, false));
    EXPECT_TRUE(apply({{"FifoQueue", "true"}}, true));
}

TEST(QueueConfig, QueueNamesFollowSqsRules) {
    EXPECT_TRUE(valid_new_queue_name("orders-1_x", false));
    EXPECT_TRUE(valid_new_queue_name("orders.fifo", true));
    EXPECT_FALSE(valid_new_queue_name("orders.x", false));
    EXPECT_FALSE(valid_new_queue_name(std::string(81, 'a'), false));
    EXPECT_FALSE(valid_new_queue_name("", false));
    EXPECT_FALSE(valid_new_queue_name(".fifo", true));
}

TEST(QueueConfig, PermissionsAreStatementsOfThePolicy) {
    auto p = add_permission_statement("", "arn:aws:sqs:us-east-1:000000000000:q", "l1",
                                      {"111122223333"}, {"SendMessage"});
    ASSERT_TRUE(p);
    EXPECT_NE(p->find("\"Sid\":\"l1\""), std::string::npos);
    EXPECT_NE(p->find("arn:aws:iam::111122223333:root"), std::string::npos);
    EXPECT_FALSE(add_permission_statement(*p, "arn", "l1", {"1"}, {"SendMessage"}));
    EXPECT_FALSE(add_permission_statement(*p, "arn", "l2", {"1"}, {"DeleteQueue"}));
    auto removed = remove_permission_statement(*p, "l1");
    ASSERT_TRUE(removed);
    EXPECT_EQ(*removed, "");
    EXPECT_FALSE(remove_permission_statement(*p, "nope"));
}

TEST(MessageRules, AllowedCharactersAreSqssSet) {
    EXPECT_TRUE(valid_message_text("tab\tnewline\n\u00e9\U0001F600"));
    EXPECT_FALSE(valid_message_text(std::string("nul\0", 4)));
    EXPECT_FALSE(valid_message_text("\x01"));
    EXPECT_FALSE(valid_message_text("\xef\xbf\xbe"));  // U+FFFE
    EXPECT_FALSE(valid_message_text("\xc3"));          // truncated UTF-8
    EXPECT_FALSE(valid_message_text("\xc0\xaf"));      // overlong
}

TEST(MessageRules, AttributeNamesFollowSqsRules) {
    EXPECT_TRUE(valid_attribute_name("trace-id_1.x"));
    EXPECT_FALSE(valid_attribute_name("AWS.x"));
    EXPECT_FALSE(valid_attribute_name("amazon.x"));
    EXPECT_FALSE(valid_attribute_name(".x"));
    EXPECT_FALSE(valid_attribute_name("x..y"));
    EXPECT_FALSE(valid_attribute_name("x y"));
}

}  // namespace
}  // namespace sluice::backend::queue
