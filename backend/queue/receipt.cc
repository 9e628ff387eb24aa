#include "backend/queue/receipt.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "protocol/core/base64.h"

namespace sluice::backend::queue {
namespace {

constexpr std::uint8_t handle_version = 1;
constexpr std::size_t body_bytes = 1 + 16 + 4 + 8 + 4;
constexpr std::size_t tag_bytes = 16;

void put_be(std::uint8_t* p, std::uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) {
        p[i] = static_cast<std::uint8_t>(v & 0xff);
        v >>= 8;
    }
}

std::uint64_t get_be(const std::uint8_t* p, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
        v = (v << 8) | p[i];
    }
    return v;
}

constexpr std::size_t sha256_block = 64;

struct md_ctx_free {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, md_ctx_free>;

[[noreturn]] void mac_failed() {
    throw std::runtime_error("HMAC-SHA256 failed");
}

md_ctx_ptr new_ctx() {
    md_ctx_ptr c(EVP_MD_CTX_new());
    if (!c) {
        mac_failed();
    }
    return c;
}

}  // namespace

/// HMAC (RFC 2104) with its two keyed SHA-256 states: hash((key ^ opad) || hash((key ^ ipad) ||
/// data)), each state having absorbed its padded key block already.
struct receipt_signer::keyed {
    EVP_MD* md = nullptr;
    md_ctx_ptr inner;
    md_ctx_ptr outer;

    explicit keyed(const std::string& key) {
        md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
        if (md == nullptr) {
            mac_failed();
        }
        std::array<std::uint8_t, sha256_block> block{};
        if (key.size() > sha256_block) {
            unsigned int len = 0;
            if (EVP_Digest(key.data(), key.size(), block.data(), &len, md, nullptr) != 1) {
                mac_failed();
            }
        } else {
            std::memcpy(block.data(), key.data(), key.size());
        }
        inner = start(block, 0x36);
        outer = start(block, 0x5c);
        OPENSSL_cleanse(block.data(), block.size());
    }
    ~keyed() { EVP_MD_free(md); }
    keyed(const keyed&) = delete;
    keyed& operator=(const keyed&) = delete;

    md_ctx_ptr start(const std::array<std::uint8_t, sha256_block>& key_block, std::uint8_t pad) const {
        std::array<std::uint8_t, sha256_block> padded{};
        for (std::size_t i = 0; i < padded.size(); ++i) {
            padded[i] = key_block[i] ^ pad;
        }
        auto c = new_ctx();
        const bool ok = EVP_DigestInit_ex(c.get(), md, nullptr) == 1 &&
                        EVP_DigestUpdate(c.get(), padded.data(), padded.size()) == 1;
        OPENSSL_cleanse(padded.data(), padded.size());
        if (!ok) {
            mac_failed();
        }
        return c;
    }
};

receipt_signer::receipt_signer(std::string key) : keyed_(std::make_unique<const keyed>(key)) {
    OPENSSL_cleanse(key.data(), key.size());
}

receipt_signer::~receipt_signer() = default;

std::array<std::uint8_t, 32> receipt_signer::mac(const std::uint8_t* data, std::size_t n) const {
    // One working context per thread; the keyed states are only read (copied from).
    thread_local const md_ctx_ptr work = new_ctx();
    std::array<std::uint8_t, 32> inner{};
    std::array<std::uint8_t, 32> out{};
    unsigned int len = 0;
    if (EVP_MD_CTX_copy_ex(work.get(), keyed_->inner.get()) != 1 ||
        EVP_DigestUpdate(work.get(), data, n) != 1 ||
        EVP_DigestFinal_ex(work.get(), inner.data(), &len) != 1 ||
        EVP_MD_CTX_copy_ex(work.get(), keyed_->outer.get()) != 1 ||
        EVP_DigestUpdate(work.get(), inner.data(), inner.size()) != 1 ||
        EVP_DigestFinal_ex(work.get(), out.data(), &len) != 1) {
        mac_failed();
    }
    return out;
}

std::string receipt_signer::random_key() {
    std::string key(key_bytes, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
        throw std::runtime_error("no random bytes for the receipt-handle key");
    }
    return key;
}

std::string receipt_signer::issue(const receipt& r) const {
    std::array<std::uint8_t, body_bytes + tag_bytes> buf{};
    buf[0] = handle_version;
    std::memcpy(&buf[1], r.queue_id.bytes.data(), 16);
    put_be(&buf[17], static_cast<std::uint32_t>(r.partition), 4);
    put_be(&buf[21], static_cast<std::uint64_t>(r.offset), 8);
    put_be(&buf[29], static_cast<std::uint32_t>(r.receive_count), 4);
    const auto tag = mac(buf.data(), body_bytes);
    std::memcpy(&buf[body_bytes], tag.data(), tag_bytes);
    return protocol::base64_encode(
        std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()),
        protocol::base64_alphabet::url);
}

std::optional<receipt> receipt_signer::verify(std::string_view handle) const {
    // Checked before decoding: a handle has exactly one length.
    if (handle.size() != (body_bytes + tag_bytes) * 4 / 3 + 1) {
        return std::nullopt;
    }
    auto raw = protocol::base64_decode(handle, protocol::base64_alphabet::url);
    if (!raw || raw->size() != body_bytes + tag_bytes) {
        return std::nullopt;
    }
    const auto* p = reinterpret_cast<const std::uint8_t*>(raw->data());
    if (p[0] != handle_version) {
        return std::nullopt;
    }
    const auto tag = mac(p, body_bytes);
    if (CRYPTO_memcmp(tag.data(), p + body_bytes, tag_bytes) != 0) {
        return std::nullopt;
    }
    receipt r;
    std::memcpy(r.queue_id.bytes.data(), p + 1, 16);
    r.partition = static_cast<std::int32_t>(get_be(p + 17, 4));
    r.offset = static_cast<std::int64_t>(get_be(p + 21, 8));
    r.receive_count = static_cast<std::int32_t>(get_be(p + 29, 4));
    return r;
}

std::string message_id(const uuid& queue_id, std::int32_t partition, std::int64_t offset) {
    // The queue id's first four bytes, the partition, then offset bits 63-48, 47-32 and 47-0
    // in hex, as ids have always been spelled (one per received message: by hand, not fmt).
    static constexpr char hex[] = "0123456789abcdef";
    std::string out(36, '-');
    std::size_t at = 0;
    const auto put = [&](std::uint64_t v, int digits) {
        for (int i = digits - 1; i >= 0; --i) {
            out[at++] = hex[(v >> (4 * i)) & 0xf];
        }
    };
    for (int i = 0; i < 4; ++i) {
        put(static_cast<std::uint8_t>(queue_id.bytes[i]), 2);
    }
    const auto o = static_cast<std::uint64_t>(offset);
    ++at;
    put(static_cast<std::uint16_t>(partition), 4);
    ++at;
    put((o >> 48) & 0xffff, 4);
    ++at;
    put((o >> 32) & 0xffff, 4);
    ++at;
    put(o & 0xffffffffffffULL, 12);
    return out;
}

std::string sequence_number(std::int32_t partition, std::int64_t offset) {
    // The partition in the top digits keeps numbers unique across partitions; within one
    // partition they grow with the offset.
    return fmt::format("{:05d}{:015d}", partition, offset);
}

}  // namespace sluice::backend::queue
