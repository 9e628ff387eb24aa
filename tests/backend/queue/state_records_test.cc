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
        lease_record{id, 2, 1000, 1'700'000'035'000},
        lease_key{id, 2},
    };
    for (const auto& e : entries) {
        EXPECT_EQ(round_trip(e), e) << "variant index " << e.index();
    }
}

std::vector<std::byte> bytes(std::initializer_list<int> v) {
    std::vector<std::byte> out;
    for (int b : v) {
        out.push_back(static_cast<std::byte>(b));
    }
    return out;
}

uuid counting_uuid() {
    uuid u;
    for (std::size_t i = 0; i < 16; ++i) {
        u.bytes[i] = static_cast<std::uint8_t>(i + 1);
    }
    return u;
}

// Logs written by earlier builds must replay: the fixed-size records keep their exact bytes,
// whether encoded through the variant or directly.
TEST(StateRecords, MessageAndCursorRecordsKeepTheirBytes) {
    const uuid id = counting_uuid();
    const auto id_bytes = bytes({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    auto key = [&](int type, std::initializer_list<int> tail) {
        auto k = bytes({0, type});
        k.insert(k.end(), id_bytes.begin(), id_bytes.end());
        auto t = bytes(tail);
        k.insert(k.end(), t.begin(), t.end());
        return k;
    };
    const message_record m{id, 0x01020304, 0x0506, stored_phase::deleted, 7, 0x0102, 0x0a0b};
    const auto m_key = key(2, {1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 5, 6});
    const auto m_value =
        bytes({0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0x0a, 0x0b});
    const cursor_record c{id, 3, 0x0102030405060708};
    const auto c_key = key(1, {0, 0, 0, 3});
    const auto c_value = bytes({0, 0, 1, 2, 3, 4, 5, 6, 7, 8});

    for (const auto& enc : {encode(m), encode(state_entry{m})}) {
        EXPECT_EQ(enc.key, m_key);
        EXPECT_EQ(enc.value, m_value);
    }
    for (const auto& enc : {encode(message_key{id, 0x01020304, 0x0506}),
                            encode(state_entry{message_key{id, 0x01020304, 0x0506}})}) {
        EXPECT_EQ(enc.key, m_key);
        EXPECT_FALSE(enc.value);
    }
    for (const auto& enc : {encode(c), encode(state_entry{c})}) {
        EXPECT_EQ(enc.key, c_key);
        EXPECT_EQ(enc.value, c_value);
    }
    for (const auto& enc : {encode(cursor_key{id, 3}), encode(state_entry{cursor_key{id, 3}})}) {
        EXPECT_EQ(enc.key, c_key);
        EXPECT_FALSE(enc.value);
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
