// The byte layout of __queue_state records: every record type round-trips; bad bytes and
// unknown versions are errors, never trusted.
#include <gtest/gtest.h>

#include "backend/queue/state_records.h"
#include "protocol/core/errc.h"

namespace sluice::backend::queue {
namespace {

state_entry round_trip(const state_entry& e) {
    auto enc = encode(e);
    std::optional<protocol::bytes_view> value;
    if (enc.value) {
        value = protocol::bytes_view(enc.value->data(), enc.value->size());
    }
    auto dec = decode(protocol::bytes_view(enc.key.data(), enc.key.size()), value);
    EXPECT_TRUE(dec) << (dec ? "" : dec.error().message());
    return dec ? *dec : state_entry{};
}

TEST(StateRecords, EveryRecordTypeRoundTrips) {
    const uuid id = uuid::random();
    queue_record q{"orders.fifo", id, uuid::random(), true, 1, 2, 3,
                   {{"VisibilityTimeout", "60"}}, {{"team", "blue"}}};
    task_record t{"h1", "dlq", id, "arn:aws:sqs:us-east-1:000000000000:src", 10, "RUNNING", 5, 9,
                  std::nullopt, 1234, {7, 8}};
    const std::vector<state_entry> entries = {
        q,
        cursor_record{id, 3, 42},
        message_record{id, 1, 99, stored_phase::deleted, 4, 5, 6},
        secret_record{std::string(32, 'k')},
        deleted_queue_record{"gone", 77},
        t,
        queue_key{"orders.fifo"},
        cursor_key{id, 3},
        message_key{id, 1, 99},
        deleted_queue_key{"gone"},
        task_key{"h1"},
    };
    for (const auto& e : entries) {
        EXPECT_EQ(round_trip(e), e) << "variant index " << e.index();
    }
}

TEST(StateRecords, TruncatedValuesAreErrors) {
    auto enc = encode(message_record{uuid::random(), 0, 1, stored_phase::received, 1, 2, 3});
    auto value = *enc.value;
    value.resize(value.size() - 3);

    auto dec = decode(protocol::bytes_view(enc.key.data(), enc.key.size()),
                      protocol::bytes_view(value.data(), value.size()));

    EXPECT_FALSE(dec);
}

TEST(StateRecords, UnknownKeyTypesAndVersionsAreRefused) {
    std::vector<std::byte> key{std::byte{0}, std::byte{42}};
    EXPECT_FALSE(decode(protocol::bytes_view(key.data(), key.size()), std::nullopt));

    auto enc = encode(cursor_record{uuid::random(), 0, 5});
    (*enc.value)[1] = std::byte{9};  // version 9
    auto dec = decode(protocol::bytes_view(enc.key.data(), enc.key.size()),
                      protocol::bytes_view(enc.value->data(), enc.value->size()));
    ASSERT_FALSE(dec);
    EXPECT_EQ(dec.error(), protocol::errc::unsupported_version);
}

}  // namespace
}  // namespace sluice::backend::queue
