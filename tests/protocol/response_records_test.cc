// The records field of responses: a partition a handler answers with an error only (no data
// set) must carry empty records, never null, in every version. compat: Kafka's brokers set
// MemoryRecords.EMPTY there, and librdkafka refuses a whole Fetch response holding a null one
// ("invalid MessageSetSize -1"), so its consumer never sees the partition's error.
#include <gtest/gtest.h>

#include <cstdint>

#include "protocol/core/bytes.h"
#include "protocol/kafka/all_messages.h"

namespace sluice::protocol::kafka {
namespace {

/// A Fetch response with one partition that only has an error, as the handler builds it.
fetch_response error_only_response() {
    fetch_response resp;
    auto& topic = resp.responses.emplace_back();
    topic.topic = "t";
    auto& part = topic.partitions.emplace_back();
    part.partition_index = partition_id(0);
    part.error_code = error_code::topic_authorization_failed;
    part.high_watermark = offset(-1);
    return resp;
}

TEST(ResponseRecords, ErrorOnlyFetchPartitionHasEmptyRecordsInEveryVersion) {
    for (std::int16_t v = 0; v <= 18; ++v) {
        SCOPED_TRACE(::testing::Message() << "version " << v);
        writer w;
        error_only_response().encode(w, v);
        const byte_buffer bytes = w.flatten();
        reader r(bytes.view());
        fetch_response back;

        back.decode(r, v);

        ASSERT_TRUE(r.ok()) << r.error().message();
        const auto& recs = back.responses.at(0).partitions.at(0).records;
        EXPECT_FALSE(recs.is_null());
        EXPECT_EQ(recs.size(), 0u);
    }
}

TEST(ResponseRecords, ErrorOnlyFetchPartitionEndsWithAZeroRecordsLength) {
    // v11, the last classic version: the partition ends with the records' int32 length.
    writer w;
    error_only_response().encode(w, 11);
    const byte_buffer bytes = w.flatten();

    ASSERT_GE(bytes.size(), 4u);
    const std::byte* end = bytes.data() + bytes.size();
    for (int i = 1; i <= 4; ++i) {
        EXPECT_EQ(end[-i], std::byte{0}) << "byte " << -i;  // -1 would be 0xff ff ff ff
    }
}

TEST(ResponseRecords, NullRecordsStayNullWhereTheSchemaAllowsNull) {
    // Produce requests carry records that are nullable in every version; a client's null
    // must survive a re-encode (the decoder keeps what it read).
    produce_request req;
    auto& topic = req.topic_data.emplace_back();
    topic.name = "t";
    auto& part = topic.partition_data.emplace_back();
    part.records = records();  // null, as a client may send it
    writer w;
    req.encode(w, 3);
    const byte_buffer bytes = w.flatten();
    reader r(bytes.view());
    produce_request back;

    back.decode(r, 3);

    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(back.topic_data.at(0).partition_data.at(0).records.is_null());
}

}  // namespace
}  // namespace sluice::protocol::kafka
