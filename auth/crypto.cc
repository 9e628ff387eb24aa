#include "auth/crypto.h"

#include <stdexcept>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace sluice::auth {
namespace {

const EVP_MD* evp_digest(hash_algorithm h) {
    return h == hash_algorithm::sha256 ? EVP_sha256() : EVP_sha512();
}

}  // namespace

std::size_t digest_size(hash_algorithm h) { return h == hash_algorithm::sha256 ? 32 : 64; }

std::string hash(hash_algorithm h, std::string_view data) {
    std::string out(digest_size(h), '\0');
    unsigned int len = 0;
    if (EVP_Digest(data.data(), data.size(), reinterpret_cast<unsigned char*>(out.data()), &len,
                   evp_digest(h), nullptr) != 1) {
        throw std::runtime_error("EVP_Digest failed");
    }
    out.resize(len);
    return out;
}

std::string hmac(hash_algorithm h, std::string_view key, std::string_view data) {
    std::string out(EVP_MAX_MD_SIZE, '\0');
    unsigned int len = 0;
    if (HMAC(evp_digest(h), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(data.data()), data.size(),
             reinterpret_cast<unsigned char*>(out.data()), &len) == nullptr) {
        throw std::runtime_error("HMAC failed");
    }
    out.resize(len);
    return out;
}

std::string pbkdf2(hash_algorithm h, std::string_view password, std::string_view salt,
                   int iterations) {
    std::string out(digest_size(h), '\0');
    if (PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                          reinterpret_cast<const unsigned char*>(salt.data()),
                          static_cast<int>(salt.size()), iterations, evp_digest(h),
                          static_cast<int>(out.size()),
                          reinterpret_cast<unsigned char*>(out.data())) != 1) {
        throw std::runtime_error("PKCS5_PBKDF2_HMAC failed");
    }
    return out;
}

std::string random_bytes(std::size_t n) {
    std::string out(n, '\0');
    if (n > 0 &&
        RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
        throw std::runtime_error("RAND_bytes failed");
    }
    return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace sluice::auth
