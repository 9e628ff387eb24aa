#pragma once
// What the server and client TLS contexts (tls_context.cc, tls_client_context.cc) both need
// from OpenSSL: owning handles, a memory BIO over PEM text, the queued error as text, a PEM
// file read with errors that name the setting, and a passphrase callback that never prompts.
// Internal to auth/tls.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "auth/tls/tls_context.h"

namespace sluice::auth::openssl {

struct bio_deleter {
    void operator()(BIO* b) const { BIO_free(b); }
};
struct x509_deleter {
    void operator()(X509* x) const { X509_free(x); }
};
struct pkey_deleter {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using bio_ptr = std::unique_ptr<BIO, bio_deleter>;
using x509_ptr = std::unique_ptr<X509, x509_deleter>;
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_deleter>;

inline bio_ptr memory_bio(const std::string& text) {
    return bio_ptr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

/// The oldest error OpenSSL queued, as text, and the queue cleared.
inline std::string reason() {
    const unsigned long code = ERR_get_error();
    std::string out;
    if (code != 0) {
        const char* r = ERR_reason_error_string(code);
        out = r ? r : "error " + std::to_string(code);
    }
    ERR_clear_error();
    return out.empty() ? "unknown OpenSSL error" : out;
}

/// The whole file, or tls_error naming the setting, the file and why it cannot be read.
inline std::string read_file(const std::string& setting, const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw tls_error(setting + " " + path + ": cannot read: " + std::strerror(errno));
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
        throw tls_error(setting + " " + path + ": cannot read");
    }
    return text;
}

/// A key protected by a passphrase nobody gave is refused rather than prompting on the
/// terminal.
inline int no_passphrase(char*, int, int, void*) {
    return -1;
}

}  // namespace sluice::auth::openssl
