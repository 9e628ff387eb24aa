#include <gtest/gtest.h>

#include <vector>

#include "gateway/sqs/md5.h"

namespace sluice::gateway::sqs {
namespace {

using backend::api::message_attribute;

TEST(SqsMd5, OfTheBodyIsTheHexDigestOfItsBytes) {
    EXPECT_EQ(md5_hex("hello"), "5d41402abc4b2a76b9719d911017c592");
    EXPECT_EQ(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
}

TEST(SqsMd5, OfAttributesSortsByNameAndMarksBinaryTypes) {
    // The value computed by the developer guide's algorithm written independently in Python
    // (tests/integration/sqs_support.py): names sorted, custom labels in the type, transport 2
    // for Binary.gzip.
    std::vector<message_attribute> attrs{{"s", "String", "v"},
                                         {"n", "Number.float", "1.5"},
                                         {"b", "Binary.gzip", std::string("\x00\x01", 2)}};
    EXPECT_EQ(md5_of_attributes(attrs), "98c3358e07aa4ba7bcaa4dd0f904195f");
    std::vector<message_attribute> reordered{attrs[2], attrs[0], attrs[1]};
    EXPECT_EQ(md5_of_attributes(reordered), md5_of_attributes(attrs));
}

TEST(SqsMd5, BinaryTypesAreBinaryAndItsLabelsToo) {
    EXPECT_TRUE(is_binary_type("Binary"));
    EXPECT_TRUE(is_binary_type("Binary.gzip"));
    EXPECT_FALSE(is_binary_type("String"));
    EXPECT_FALSE(is_binary_type("BinaryX"));
    EXPECT_FALSE(is_binary_type("Number.Binary"));
}

}  // namespace
}  // namespace sluice::gateway::sqs
