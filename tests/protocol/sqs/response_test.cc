#include <gtest/gtest.h>

#include <string>

#include "protocol/core/json.h"
#include "protocol/sqs/response.h"
#include "protocol/sqs/text.h"

namespace sluice::protocol::sqs {
namespace {

TEST(SqsResponseJson, WritesMembersListsAndMaps) {
    response_writer w(wire::json, "ReceiveMessage", true);
    w.begin_list("Messages", "Message");
    w.begin_list_object();
    w.string("Body", "a \"quoted\" body");
    w.string_map("Attributes", "Attribute", "Name", "Value", {{"ApproximateReceiveCount", "1"}});
    const std::string bin("\x00\xff", 2);
    w.attribute_map("MessageAttributes", "MessageAttribute",
                    {{"s", "String", "v", false}, {"b", "Binary.gzip", bin, true}});
    w.end_list_object();
    w.end_list();
    w.integer("N", 3);
    w.boolean("B", true);
    const std::string body = w.finish("req-1");

    rapidjson::Document doc;
    ASSERT_TRUE(parse_json(doc, body)) << body;
    const auto& m = doc["Messages"][0];
    EXPECT_STREQ(m["Body"].GetString(), "a \"quoted\" body");
    EXPECT_STREQ(m["Attributes"]["ApproximateReceiveCount"].GetString(), "1");
    EXPECT_STREQ(m["MessageAttributes"]["s"]["StringValue"].GetString(), "v");
    EXPECT_STREQ(m["MessageAttributes"]["b"]["BinaryValue"].GetString(), "AP8=");
    EXPECT_STREQ(m["MessageAttributes"]["b"]["DataType"].GetString(), "Binary.gzip");
    EXPECT_EQ(doc["N"].GetInt64(), 3);
    EXPECT_TRUE(doc["B"].GetBool());
    EXPECT_STREQ(response_writer::content_type(wire::json), "application/x-amz-json-1.0");
}

TEST(SqsResponseQuery, WrapsTheResultAndFlattensLists) {
    response_writer w(wire::query, "ListQueues", true);
    w.begin_list("QueueUrls", "QueueUrl");
    w.list_string("http://h/1/a");
    w.list_string("http://h/1/b&c");
    w.end_list();
    EXPECT_EQ(w.finish("r"),
              "<?xml version=\"1.0\"?><ListQueuesResponse "
              "xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\"><ListQueuesResult>"
              "<QueueUrl>http://h/1/a</QueueUrl><QueueUrl>http://h/1/b&amp;c</QueueUrl>"
              "</ListQueuesResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>"
              "</ListQueuesResponse>");
}

TEST(SqsResponseQuery, AnActionWithoutOutputHasNoResultElement) {
    response_writer w(wire::query, "DeleteQueue", false);
    const std::string body = w.finish("r");
    EXPECT_EQ(body.find("DeleteQueueResult"), std::string::npos);
    EXPECT_NE(body.find("<DeleteQueueResponse"), std::string::npos);
}

TEST(SqsResponseQuery, WritesAttributesWithNameAndValue) {
    response_writer w(wire::query, "ReceiveMessage", true);
    w.attribute_map("MessageAttributes", "MessageAttribute", {{"k", "Number", "12", false}});
    w.string_map("Attributes", "Attribute", "Name", "Value", {{"SenderId", "1"}});
    const std::string body = w.finish("r");
    EXPECT_NE(body.find("<MessageAttribute><Name>k</Name><Value><StringValue>12</StringValue>"
                        "<DataType>Number</DataType></Value></MessageAttribute>"),
              std::string::npos)
        << body;
    EXPECT_NE(body.find("<Attribute><Name>SenderId</Name><Value>1</Value></Attribute>"),
              std::string::npos);
}

TEST(SqsResponseErrors, JsonCarriesTheNamespacedType) {
    rapidjson::Document doc;
    ASSERT_TRUE(parse_json(doc, error_body(wire::json, "QueueDoesNotExist",
                                           "AWS.SimpleQueueService.NonExistentQueue", true,
                                           "no such queue", "r")));
    EXPECT_STREQ(doc["__type"].GetString(), "com.amazonaws.sqs#QueueDoesNotExist");
    EXPECT_STREQ(doc["message"].GetString(), "no such queue");
    // A type that names its own namespace is kept as it is.
    ASSERT_TRUE(parse_json(doc, error_body(wire::json,
                                           "com.amazon.coral.service#UnknownOperationException",
                                           "InvalidAction", true, "m", "r")));
    EXPECT_STREQ(doc["__type"].GetString(), "com.amazon.coral.service#UnknownOperationException");
}

TEST(SqsResponseErrors, QueryCarriesTypeCodeAndEscapedMessage) {
    const std::string body = error_body(wire::query, "InvalidParameterValue",
                                        "InvalidParameterValue", false, "a < b", "r-1");
    EXPECT_NE(body.find("<Type>Receiver</Type><Code>InvalidParameterValue</Code>"
                        "<Message>a &lt; b</Message>"),
              std::string::npos)
        << body;
    EXPECT_NE(body.find("<RequestId>r-1</RequestId>"), std::string::npos);
}

TEST(SqsXmlEscaping, EscapesMarkupQuotesAndCarriageReturns) {
    std::string out;
    append_xml_escaped(out, "<a href='x'>&\"\r\n</a>");
    EXPECT_EQ(out, "&lt;a href=&apos;x&apos;&gt;&amp;&quot;&#xD;\n&lt;/a&gt;");
}

TEST(SqsText, AllowsXmlCharactersOnly) {
    EXPECT_TRUE(allowed_text("plain \t\r\n text"));
    EXPECT_TRUE(allowed_text("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
    EXPECT_TRUE(allowed_text("\xef\xbf\xbd"));                            // U+FFFD
    EXPECT_FALSE(allowed_text(std::string("\x00", 1)));
    EXPECT_FALSE(allowed_text("\x07"));
    EXPECT_FALSE(allowed_text("\xef\xbf\xbe"));              // U+FFFE
    EXPECT_FALSE(allowed_text("\xed\xbf\xbf"));              // a surrogate's encoding
    EXPECT_FALSE(allowed_text("\x80"));                      // a stray continuation byte
    EXPECT_FALSE(allowed_text("\xc3"));                      // truncated
    EXPECT_FALSE(allowed_text("\xc0\xaf"));                  // overlong
    EXPECT_FALSE(allowed_text("\xf4\x90\x80\x80"));          // above U+10FFFF
}

TEST(SqsText, SanitizeReplacesWhatIsNotAllowed) {
    EXPECT_EQ(sanitize_text("ok"), "ok");
    EXPECT_EQ(sanitize_text(std::string("a\x00" "b", 3)), "a\xef\xbf\xbd" "b");
    EXPECT_TRUE(allowed_text(sanitize_text("\xff\xfe\xed\xa0\x80 x \x01")));
}

}  // namespace
}  // namespace sluice::protocol::sqs
