// The HTTP front's small codecs: base64, JSON reading and writing, media types, timestamps,
// the key partitioner and the REST error mapping.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "backend/api/errc.h"
#include "gateway/http/error_mapping.h"
#include "gateway/http/json.h"
#include "backend/client/broker_producer.h"
#include "gateway/http/record_producer.h"
#include "gateway/http/rest/media_type.h"
#include "gateway/http/rest/rest_support.h"
#include "protocol/core/base64.h"

namespace sluice::gateway {
namespace {

namespace api = backend::api;

// The HTTP front decodes base64 as the REST Proxy does: padding optional.
std::optional<std::string> base64_decode(std::string_view text) {
    return protocol::base64_decode(text, protocol::base64_alphabet::standard,
                                   protocol::base64_padding::optional);
}
using protocol::base64_encode;

TEST(Base64, RoundTripsEveryLength) {
    std::string bytes;
    for (int n = 0; n < 40; ++n) {
        auto encoded = base64_encode(bytes);
        EXPECT_EQ(encoded.size() % 4, 0u);
        auto decoded = base64_decode(encoded);
        ASSERT_TRUE(decoded) << encoded;
        EXPECT_EQ(*decoded, bytes);
        bytes.push_back(static_cast<char>(n * 37));
    }
}

TEST(Base64, KnownValues) {
    EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_EQ(*base64_decode("Zm8="), "fo");
    EXPECT_EQ(*base64_decode("Zm8"), "fo");  // unpadded is accepted
}

TEST(Base64, RejectsBadInput) {
    EXPECT_FALSE(base64_decode("Zm9v!"));
    EXPECT_FALSE(base64_decode("Z"));
    EXPECT_FALSE(base64_decode("Zm=8"));
    EXPECT_FALSE(base64_decode("Zm8 "));
    EXPECT_FALSE(base64_decode("Zm9=="));
}

TEST(Json, ParsesAWholeDocumentAndRejectsTrailingBytes) {
    json::document doc;
    EXPECT_FALSE(json::parse(R"({"a":[1,2,{"b":null}]})", doc));
    EXPECT_TRUE(doc.IsObject());
    EXPECT_TRUE(json::parse(R"({"a":1} x)", doc));
    EXPECT_TRUE(json::parse(R"({"a":)", doc));
    EXPECT_TRUE(json::parse("", doc));
}

TEST(Json, NumbersReadWithinAnUlpAndZerosStayZero) {
    // RapidJSON's full-precision mode reads "0e-38" as -4.45e-308 (found by fuzz_http_json):
    // it stays off; numbers are then within one unit in the last place, written and read back.
    for (std::string_view text : {"0e-38", "0.0e5", "-0e-400", "0.000"}) {
        json::document doc;
        ASSERT_FALSE(json::parse(text, doc)) << text;
        EXPECT_EQ(doc.GetDouble(), 0.0) << text;
    }
    for (std::string_view text : {"988088888888888888888888", "0.1", "2.2250738585072014e-308",
                                  "1.7976931348623157e308", "123456789012345678901234567890"}) {
        json::document doc;
        ASSERT_FALSE(json::parse(text, doc)) << text;
        const double exact = std::strtod(std::string(text).c_str(), nullptr);
        EXPECT_LE(std::fabs(doc.GetDouble() - exact), std::fabs(exact) * 4e-16) << text;
        json::document again;
        ASSERT_FALSE(json::parse(json::to_string(doc), again));
        EXPECT_LE(std::fabs(again.GetDouble() - exact), std::fabs(exact) * 8e-16) << text;
    }
}

TEST(Json, ANumberNoDoubleHoldsIsNotStored) {
    // Found by fuzz_http_json: RapidJSON reads this as -infinity, which has no JSON text.
    json::document doc;
    ASSERT_FALSE(json::parse(R"({"v":-30630657516852034110e306})", doc));
    EXPECT_FALSE(json::to_stored_text(doc));
    EXPECT_FALSE(json::to_stored_text(doc["v"]));
    json::document fine;
    ASSERT_FALSE(json::parse(R"({"v":1e308,"w":[0.5]})", fine));
    EXPECT_EQ(json::to_stored_text(fine), json::to_string(fine));
}

TEST(Json, ALoneSurrogateEscapeIsWrittenAsAReplacementCharacter) {
    json::document doc;
    ASSERT_FALSE(json::parse(R"({"v":"a\ude00b","w":"\ud83d\ude00"})", doc));
    const auto written = json::to_string(doc);
    EXPECT_TRUE(json::valid_utf8(written));
    // Each byte of the surrogate's three is replaced; a proper pair stays as it is.
    EXPECT_EQ(written, "{\"v\":\"a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                       "b\",\"w\":\"\xF0\x9F\x98\x80\"}");
    json::document again;
    EXPECT_FALSE(json::parse(written, again));
}

TEST(Json, DeepNestingDoesNotRecurse) {
    // Iterative parsing: a million levels would overflow the stack of a recursive parser.
    std::string deep(1000000, '[');
    deep += std::string(1000000, ']');
    json::document doc;
    EXPECT_FALSE(json::parse(deep, doc));
}

TEST(Json, RejectsInvalidUtf8Input) {
    json::document doc;
    EXPECT_TRUE(json::parse("\"\xff\xfe\"", doc));
}

TEST(Json, ParseInPlaceReadsWhatParseReads) {
    for (const std::string& text :
         {std::string(R"({"a":[1,2,{"b":null}],"s":"x\u00e9\n\"q\"","t":"hé"})"),
          std::string("{}"),
          std::string(R"( ["0123456789abcdef0123456789abcdef\/", -1.5e3] )")}) {
        json::document expected;
        ASSERT_FALSE(json::parse(text, expected));
        std::string buffer = text;
        json::document doc;
        ASSERT_FALSE(json::parse_in_place(buffer, doc));
        EXPECT_EQ(json::to_string(doc), json::to_string(expected));
    }
}

TEST(Json, ParseInPlaceFailsAsParseDoes) {
    for (const std::string& text :
         {std::string(R"({"a":1} x)"), std::string(R"({"a":)"), std::string(),
          std::string("\"\xff\xfe\""), std::string("[\"ok\", \xc3]"),
          std::string("{\"a\":1}\0x", 9), std::string("\"a\0b\"", 5)}) {
        json::document expected;
        const auto want = json::parse(text, expected);
        std::string buffer = text;
        json::document doc;
        EXPECT_EQ(json::parse_in_place(buffer, doc), want) << text;
    }
}

TEST(Json, ParsePrefixReadsConcatenatedValues) {
    const std::string text = R"( {"a":1}{"b":2}
{"c":)";
    json::document doc;
    std::size_t used = 0;
    bool incomplete = false;
    ASSERT_FALSE(json::parse_prefix(text, doc, used, incomplete));
    EXPECT_TRUE(doc.HasMember("a"));
    std::string_view rest = std::string_view(text).substr(used);
    ASSERT_FALSE(json::parse_prefix(rest, doc, used, incomplete));
    EXPECT_TRUE(doc.HasMember("b"));
    rest = rest.substr(used);
    EXPECT_TRUE(json::parse_prefix(rest, doc, used, incomplete));
    EXPECT_TRUE(incomplete);
    EXPECT_TRUE(json::parse_prefix("{]", doc, used, incomplete));
    EXPECT_FALSE(incomplete);
}

TEST(Json, WriterRepairsInvalidUtf8) {
    json::writer w;
    w.start_array();
    w.string("ok \xc3\xa9");
    w.string("bad \xff end");
    w.string(std::string("nul \0 inside", 12));
    w.end_array();
    EXPECT_EQ(w.view(), "[\"ok \xc3\xa9\",\"bad \xef\xbf\xbd end\",\"nul \\u0000 inside\"]");
    json::document doc;
    EXPECT_FALSE(json::parse(w.view(), doc));
}

TEST(Json, Utf8Validation) {
    EXPECT_TRUE(json::valid_utf8("plain ascii text longer than eight bytes"));
    EXPECT_TRUE(json::valid_utf8("\xe2\x82\xac \xf0\x9f\x98\x80"));
    EXPECT_FALSE(json::valid_utf8("\xc0\xaf"));          // overlong
    EXPECT_FALSE(json::valid_utf8("\xed\xa0\x80"));      // surrogate
    EXPECT_FALSE(json::valid_utf8("abc\xe2\x82"));       // truncated
    EXPECT_FALSE(json::valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST(Json, IsJsonChecksOneValue) {
    EXPECT_TRUE(json::is_json(R"({"x":[1,2]})"));
    EXPECT_TRUE(json::is_json("42"));
    EXPECT_FALSE(json::is_json("hello"));
    EXPECT_FALSE(json::is_json("{} {}"));
}

TEST(Partitioner, MatchesKafkasMurmur2) {
    // Expected partitions computed with kafka-python's murmur2 (the Java client's function).
    EXPECT_EQ(backend::client::partition_for_key("kafka", 12), 4);
    EXPECT_EQ(backend::client::partition_for_key("giberish123456789", 12), 8);
    EXPECT_EQ(backend::client::partition_for_key("1234", 12), 0);
    EXPECT_EQ(backend::client::partition_for_key("234", 12), 2);
    EXPECT_EQ(backend::client::partition_for_key("34", 12), 6);
    EXPECT_EQ(backend::client::partition_for_key("4", 12), 1);
    EXPECT_EQ(backend::client::partition_for_key("", 12), 9);
    EXPECT_EQ(backend::client::partition_for_key("key-00042", 12), 9);
}

TEST(MediaType, ContentTypes) {
    using rest::media;
    EXPECT_EQ(rest::content_media("application/vnd.kafka.json.v2+json"), media::json);
    EXPECT_EQ(rest::content_media("Application/Vnd.Kafka.Binary.V2+JSON; charset=utf-8"),
              media::binary);
    EXPECT_EQ(rest::content_media("application/vnd.kafka.v2+json"), media::v2);
    EXPECT_EQ(rest::content_media("application/json"), media::v2);
    EXPECT_EQ(rest::content_media(""), media::v2);
    EXPECT_EQ(rest::content_media("application/vnd.kafka.avro.v2+json"), media::schema);
    EXPECT_EQ(rest::content_media("text/plain"), media::unsupported);
}

TEST(MediaType, AcceptPicksTheFirstEmbeddedFormat) {
    using rest::media;
    EXPECT_FALSE(rest::accepted_records_media(""));
    EXPECT_FALSE(rest::accepted_records_media("*/*"));
    EXPECT_FALSE(rest::accepted_records_media("application/vnd.kafka.v2+json"));
    EXPECT_EQ(rest::accepted_records_media("application/vnd.kafka.json.v2+json"), media::json);
    EXPECT_EQ(rest::accepted_records_media(
                  "application/vnd.kafka.v2+json, application/vnd.kafka.binary.v2+json; q=0.9"),
              media::binary);
}

TEST(Timestamps, ParsesRfc3339) {
    EXPECT_EQ(rest::parse_timestamp("1970-01-01T00:00:00Z"), 0);
    EXPECT_EQ(rest::parse_timestamp("2021-02-05T19:14:42Z"), 1612552482000);
    EXPECT_EQ(rest::parse_timestamp("2021-02-05T19:14:42.5Z"), 1612552482500);
    EXPECT_EQ(rest::parse_timestamp("2021-02-05T20:14:42.123+01:00"), 1612552482123);
    EXPECT_FALSE(rest::parse_timestamp("2021-02-05"));
    EXPECT_FALSE(rest::parse_timestamp("2021-02-05T19:14:42"));
    EXPECT_FALSE(rest::parse_timestamp("2021-13-05T19:14:42Z"));
    EXPECT_EQ(rest::format_timestamp(1612552482123), "2021-02-05T19:14:42.123Z");
}

TEST(RestErrors, StatusIsTheCodesFirstThreeDigits) {
    EXPECT_EQ(rest::http_status(rest::code::topic_not_found), 404u);
    EXPECT_EQ(rest::http_status(rest::code::consumer_format_mismatch), 406u);
    EXPECT_EQ(rest::http_status(rest::code::invalid_payload), 422u);
    EXPECT_EQ(rest::http_status(rest::code::kafka_error), 500u);
    EXPECT_EQ(rest::http_status(rest::code::unsupported_media_type), 415u);
}

TEST(RestErrors, BackendErrorsMapByTheirMeaning) {
    using rest::code;
    EXPECT_EQ(rest::from_backend(api::errc::unknown_topic_or_partition).code,
              code::topic_not_found);
    EXPECT_EQ(rest::from_backend(api::errc::unknown_topic_or_partition, rest::subject::partition)
                  .code,
              code::partition_not_found);
    EXPECT_EQ(rest::from_backend(api::errc::not_leader).code, code::kafka_retriable_error);
    EXPECT_EQ(rest::from_backend(api::errc::storage_error).code, code::insufficient_storage);
    EXPECT_EQ(rest::http_status(code::insufficient_storage), 507u);
    EXPECT_EQ(rest::produce_error_code(api::errc::storage_error), code::insufficient_storage);
    EXPECT_EQ(rest::from_backend(api::errc::topic_already_exists).code, code::kafka_bad_request);
    EXPECT_EQ(rest::produce_error_code(api::errc::message_too_large), code::kafka_error);
    EXPECT_EQ(rest::produce_error_code(api::errc::coordinator_loading),
              code::kafka_retriable_error);
}

}  // namespace
}  // namespace sluice::gateway
