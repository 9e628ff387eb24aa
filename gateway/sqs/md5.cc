#include "gateway/sqs/md5.h"

#include <openssl/evp.h>

#include <algorithm>

#include <fmt/format.h>

namespace sluice::gateway::sqs {
namespace {

void put_length_prefixed(std::string& out, std::string_view s) {
    const auto n = static_cast<std::uint32_t>(s.size());
    out.push_back(static_cast<char>((n >> 24) & 0xff));
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    out.push_back(static_cast<char>((n >> 8) & 0xff));
    out.push_back(static_cast<char>(n & 0xff));
    out.append(s);
}

}  // namespace

bool is_binary_type(std::string_view data_type) {
    return data_type == "Binary" || data_type.starts_with("Binary.");
}

std::string md5_hex(std::string_view data) {
    // Fetched once: EVP_md5() makes OpenSSL 3 look the implementation up on every digest.
    static EVP_MD* const md5 = EVP_MD_fetch(nullptr, "MD5", nullptr);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(data.data(), data.size(), md, &n, md5 != nullptr ? md5 : EVP_md5(), nullptr);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out(n * 2, '0');
    for (unsigned int i = 0; i < n; ++i) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 0xf];
    }
    return out;
}

std::string md5_of_attributes(const std::vector<backend::api::message_attribute>& attributes) {
    std::vector<const backend::api::message_attribute*> sorted;
    sorted.reserve(attributes.size());
    for (const auto& a : attributes) {
        sorted.push_back(&a);
    }
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->name < b->name; });
    std::string buf;
    for (const auto* a : sorted) {
        put_length_prefixed(buf, a->name);
        put_length_prefixed(buf, a->data_type);
        buf.push_back(is_binary_type(a->data_type) ? 2 : 1);
        put_length_prefixed(buf, a->value);
    }
    return md5_hex(buf);
}

}  // namespace sluice::gateway::sqs
