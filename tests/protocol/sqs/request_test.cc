#include <gtest/gtest.h>

#include <string>

#include "protocol/core/json.h"
#include "protocol/sqs/request.h"

namespace sluice::protocol::sqs {
namespace {

rapidjson::Document parsed(std::string_view text) {
    rapidjson::Document doc;
    EXPECT_TRUE(parse_json(doc, text)) << text;
    return doc;
}

TEST(SqsRequestJson, ReadsStringsIntegersAndAbsentMembers) {
    auto doc = parsed(R"({"QueueUrl": "u", "MaxNumberOfMessages": 7, "WaitTimeSeconds": "3",
                         "VisibilityTimeout": null})");
    auto r = request_view::of_json(doc);
    EXPECT_EQ(r.string("QueueUrl"), "u");
    EXPECT_EQ(r.integer("MaxNumberOfMessages"), 7);
    EXPECT_EQ(r.integer("WaitTimeSeconds"), 3);  // older SDKs send numbers as strings
    EXPECT_FALSE(r.integer("VisibilityTimeout"));
    EXPECT_FALSE(r.string("Missing"));
    EXPECT_FALSE(r.error());
}

TEST(SqsRequestJson, AWrongTypeIsAStickyParameterError) {
    auto doc = parsed(R"({"QueueUrl": 5, "MaxNumberOfMessages": "ten"})");
    auto r = request_view::of_json(doc);
    EXPECT_FALSE(r.string("QueueUrl"));
    EXPECT_FALSE(r.integer("MaxNumberOfMessages"));
    ASSERT_TRUE(r.error());
    EXPECT_EQ(r.error()->code, "InvalidParameterValue");
    EXPECT_NE(r.error()->message.find("QueueUrl"), std::string::npos);  // the first one wins
}

TEST(SqsRequestJson, ReadsListsMapsAndMessageAttributes) {
    auto doc = parsed(R"({"AttributeNames": ["All", "QueueArn"],
        "tags": {"a": "1", "b": "2"},
        "MessageAttributes": {
            "s": {"DataType": "String", "StringValue": "v"},
            "b": {"DataType": "Binary.gzip", "BinaryValue": "AAEC"}}})");
    auto r = request_view::of_json(doc);
    EXPECT_EQ(r.string_list("AttributeNames", "AttributeName"),
              (std::vector<std::string>{"All", "QueueArn"}));
    auto tags = r.string_map("tags", "Tag", "Key", "Value");
    ASSERT_EQ(tags.size(), 2u);
    EXPECT_EQ(tags[1], (std::pair<std::string, std::string>{"b", "2"}));
    auto attrs = r.attribute_map("MessageAttributes", "MessageAttribute");
    ASSERT_EQ(attrs.size(), 2u);
    EXPECT_EQ(attrs[0].first, "s");
    EXPECT_EQ(attrs[0].second.string_value, "v");
    EXPECT_EQ(attrs[1].second.data_type, "Binary.gzip");
    EXPECT_EQ(attrs[1].second.binary_value, std::string("\x00\x01\x02", 3));
    EXPECT_FALSE(r.error());
}

TEST(SqsRequestJson, BadBase64InABinaryAttributeIsInvalid) {
    auto doc = parsed(R"({"MessageAttributes": {"b": {"DataType": "Binary", "BinaryValue": "%%"}}})");
    auto r = request_view::of_json(doc);
    (void)r.attribute_map("MessageAttributes", "MessageAttribute");
    ASSERT_TRUE(r.error());
    EXPECT_EQ(r.error()->code, "InvalidParameterValue");
}

TEST(SqsRequestJson, BatchEntriesAreViewsOfTheirObjects) {
    auto doc = parsed(R"({"Entries": [{"Id": "a", "MessageBody": "x"}, {"Id": "b", "DelaySeconds": 4}]})");
    auto r = request_view::of_json(doc);
    auto entries = r.entries("Entries", "SendMessageBatchRequestEntry");
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].string("Id"), "a");
    EXPECT_EQ(entries[0].string("MessageBody"), "x");
    EXPECT_EQ(entries[1].integer("DelaySeconds"), 4);
}

TEST(SqsRequestJson, EntriesThatAreNotStructuresAreInvalid) {
    auto doc = parsed(R"({"Entries": [1, 2]})");
    auto r = request_view::of_json(doc);
    EXPECT_TRUE(r.entries("Entries", "SendMessageBatchRequestEntry").empty());
    ASSERT_TRUE(r.error());
}

TEST(SqsRequestQuery, ReadsFlattenedListsInIndexOrder) {
    form_fields f{{"AttributeName.10", "c"}, {"AttributeName.2", "b"}, {"AttributeName.1", "a"}};
    auto r = request_view::of_query(f);
    EXPECT_EQ(r.string_list("AttributeNames", "AttributeName"),
              (std::vector<std::string>{"a", "b", "c"}));  // numerically, not as text
    EXPECT_FALSE(r.error());
}

TEST(SqsRequestQuery, ReadsMapsAndAttributes) {
    form_fields f{{"Attribute.1.Name", "DelaySeconds"},
                  {"Attribute.1.Value", "5"},
                  {"Tag.1.Key", "team"},
                  {"Tag.1.Value", "core"},
                  {"MessageAttribute.1.Name", "n"},
                  {"MessageAttribute.1.Value.DataType", "Number.float"},
                  {"MessageAttribute.1.Value.StringValue", "1.5"},
                  {"MessageAttribute.2.Name", "bin"},
                  {"MessageAttribute.2.Value.DataType", "Binary"},
                  {"MessageAttribute.2.Value.BinaryValue", "aGk="}};
    auto r = request_view::of_query(f);
    auto attrs = r.string_map("Attributes", "Attribute", "Name", "Value");
    ASSERT_EQ(attrs.size(), 1u);
    EXPECT_EQ(attrs[0], (std::pair<std::string, std::string>{"DelaySeconds", "5"}));
    auto tags = r.string_map("tags", "Tag", "Key", "Value");
    ASSERT_EQ(tags.size(), 1u);
    EXPECT_EQ(tags[0].first, "team");
    auto m = r.attribute_map("MessageAttributes", "MessageAttribute");
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0].second.data_type, "Number.float");
    EXPECT_EQ(m[0].second.string_value, "1.5");
    EXPECT_EQ(m[1].second.binary_value, "hi");
    EXPECT_FALSE(r.error());
}

TEST(SqsRequestQuery, AMapEntryWithoutItsValueIsInvalid) {
    form_fields f{{"Attribute.1.Name", "DelaySeconds"}};
    auto r = request_view::of_query(f);
    EXPECT_TRUE(r.string_map("Attributes", "Attribute", "Name", "Value").empty());
    ASSERT_TRUE(r.error());
    EXPECT_EQ(r.error()->code, "InvalidParameterValue");
}

TEST(SqsRequestQuery, AnIndexThatIsNotAPositiveNumberIsInvalid) {
    for (const char* name : {"AttributeName.0", "AttributeName.x", "AttributeName.-1"}) {
        form_fields f{{name, "a"}};
        auto r = request_view::of_query(f);
        EXPECT_TRUE(r.string_list("AttributeNames", "AttributeName").empty()) << name;
        EXPECT_TRUE(r.error()) << name;
    }
}

TEST(SqsRequestQuery, BatchEntriesReadTheirOwnPrefix) {
    form_fields f{{"SendMessageBatchRequestEntry.1.Id", "a"},
                  {"SendMessageBatchRequestEntry.1.MessageBody", "x"},
                  {"SendMessageBatchRequestEntry.2.Id", "b"},
                  {"SendMessageBatchRequestEntry.2.MessageAttribute.1.Name", "k"},
                  {"SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.DataType", "String"},
                  {"SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.StringValue", "v"},
                  {"QueueUrl", "u"}};
    auto r = request_view::of_query(f);
    auto entries = r.entries("Entries", "SendMessageBatchRequestEntry");
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].string("Id"), "a");
    EXPECT_EQ(entries[0].string("MessageBody"), "x");
    EXPECT_FALSE(entries[0].string("QueueUrl"));  // a request member is not an entry's
    EXPECT_FALSE(entries[1].string("MessageBody"));
    auto attrs = entries[1].attribute_map("MessageAttributes", "MessageAttribute");
    ASSERT_EQ(attrs.size(), 1u);
    EXPECT_EQ(attrs[0].second.string_value, "v");
    EXPECT_EQ(r.string("QueueUrl"), "u");
}

TEST(SqsRequestQuery, IntegersAreDigitsOnly) {
    form_fields f{{"MaxNumberOfMessages", "10"}, {"WaitTimeSeconds", "2x"}};
    auto r = request_view::of_query(f);
    EXPECT_EQ(r.integer("MaxNumberOfMessages"), 10);
    EXPECT_FALSE(r.integer("WaitTimeSeconds"));
    ASSERT_TRUE(r.error());
    EXPECT_NE(r.error()->message.find("WaitTimeSeconds"), std::string::npos);
}

}  // namespace
}  // namespace sluice::protocol::sqs
