// Receipt handles: authentic ones verify to what they name; edited, truncated, foreign and
// garbage ones do not.
#include <gtest/gtest.h>

#include "backend/queue/receipt.h"
#include "protocol/core/base64.h"

namespace sluice::backend::queue {
namespace {

TEST(Receipt, AnIssuedHandleVerifiesToWhatItNames) {
    receipt_signer s(receipt_signer::random_key());
    receipt r{uuid::random(), 3, 123456789, 7};

    auto back = s.verify(s.issue(r));

    ASSERT_TRUE(back);
    EXPECT_EQ(*back, r);
}

// Handles stay verifiable across versions: the tag is HMAC-SHA256 (RFC 2104) of the 33 body
// bytes, as a reference implementation (Python's hmac) computes it, for the key length the
// service uses and for a key longer than SHA-256's block.
TEST(Receipt, TheTagIsHmacSha256OfTheBody) {
    const receipt r{uuid::parse("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"), 3, 123456789012, 7};
    std::string key32;
    for (int i = 1; i <= 32; ++i) {
        key32.push_back(static_cast<char>(i));
    }
    std::string key100;
    for (int i = 0; i < 100; ++i) {
        key100.push_back(static_cast<char>(i));
    }
    receipt_signer a(key32);
    receipt_signer b(key100);

    EXPECT_EQ(a.issue(r), "AQ8eLTxLWml4h5altMPS4fAAAAADAAAAHL6ZGhQAAAAHZm_DQBCZ1BWiuUK3wKlSSA");
    EXPECT_EQ(b.issue(r), "AQ8eLTxLWml4h5altMPS4fAAAAADAAAAHL6ZGhQAAAAHbEHK-V0TFnNGhunCAIdOAw");
    EXPECT_EQ(a.verify(a.issue(r)), r);
}

TEST(Receipt, AnEditedHandleDoesNotVerify) {
    receipt_signer s(receipt_signer::random_key());
    const std::string h = s.issue({uuid::random(), 0, 5, 1});
    for (std::size_t i = 0; i < h.size(); ++i) {
        std::string forged = h;
        forged[i] = forged[i] == 'A' ? 'B' : 'A';
        EXPECT_FALSE(s.verify(forged)) << "position " << i;
    }
}

TEST(Receipt, AHandleOfAnotherKeyDoesNotVerify) {
    receipt_signer a(receipt_signer::random_key());
    receipt_signer b(receipt_signer::random_key());

    EXPECT_FALSE(b.verify(a.issue({uuid::random(), 0, 5, 1})));
}

TEST(Receipt, GarbageDoesNotVerify) {
    receipt_signer s(receipt_signer::random_key());
    for (std::string g : {std::string(), std::string("x"), std::string(66, 'A'),
                          std::string(66, '!'), std::string(1000, 'Z')}) {
        EXPECT_FALSE(s.verify(g)) << g;
    }
    // A well-formed handle body with no valid tag.
    std::string raw(49, '\0');
    raw[0] = 1;
    EXPECT_FALSE(s.verify(protocol::base64_encode(raw, protocol::base64_alphabet::url)));
}

TEST(Receipt, MessageIdsAreStableAndDistinct) {
    const uuid q = uuid::random();
    EXPECT_EQ(message_id(q, 0, 1), message_id(q, 0, 1));
    EXPECT_NE(message_id(q, 0, 1), message_id(q, 0, 2));
    EXPECT_NE(message_id(q, 0, 1), message_id(q, 1, 1));
    EXPECT_EQ(message_id(q, 0, 1).size(), 36u);
    EXPECT_LT(sequence_number(0, 9), sequence_number(0, 10));
    EXPECT_EQ(sequence_number(0, 10).size(), 20u);
}

TEST(Receipt, AMessageIdSpellsQueuePartitionAndOffsetInHex) {
    uuid q;
    for (std::size_t i = 0; i < q.bytes.size(); ++i) {
        q.bytes[i] = static_cast<std::uint8_t>(0xa0 + i);
    }
    // Ids once issued stay the same across versions: clients keep them (deduplication, logs).
    EXPECT_EQ(message_id(q, 3, 0x0123456789abcdefLL), "a0a1a2a3-0003-0123-4567-456789abcdef");
    EXPECT_EQ(message_id(q, 65535, 0), "a0a1a2a3-ffff-0000-0000-000000000000");
    EXPECT_EQ(message_id(q, 7, 0x7fffffffffffffffLL), "a0a1a2a3-0007-7fff-ffff-ffffffffffff");
}

TEST(Base64, RoundTripsInBothAlphabets) {
    for (std::string s : {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
                          std::string("\xff\xfe\x00\x01", 4)}) {
        for (auto a : {protocol::base64_alphabet::standard, protocol::base64_alphabet::url}) {
            auto enc = protocol::base64_encode(s, a);
            auto dec = protocol::base64_decode(enc, a);
            ASSERT_TRUE(dec) << enc;
            EXPECT_EQ(*dec, s);
        }
    }
    EXPECT_EQ(protocol::base64_encode("foob"), "Zm9vYg==");
    EXPECT_FALSE(protocol::base64_decode("Zm9vYg="));   // bad padding
    EXPECT_FALSE(protocol::base64_decode("Zm9v!g=="));  // bad character
    EXPECT_FALSE(protocol::base64_decode("Zm9vYh=="));  // non-zero trailing bits
}

}  // namespace
}  // namespace sluice::backend::queue
