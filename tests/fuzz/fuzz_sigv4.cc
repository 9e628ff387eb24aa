// Fuzzes AWS Signature Version 4 verification (auth/sigv4.h), what every SQS request passes
// before anything else reads it: the Authorization header and presigned query forms, against
// a key store with one key. Any input must be refused with one of AWS's codes (nobody here
// can sign with the secret) without crashing, and no answer may carry the secret. The
// canonical-query and URI-encoding steps are fuzzed on the same bytes.
//
// The input is split into lines: method, path, query, then "name:value" header lines up to an
// empty line, then the body.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "auth/sigv4.h"

using namespace sluice::auth;

namespace {

constexpr std::string_view secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

const aws_key_store& keys() {
    static const aws_key_store store = [] {
        aws_key_store s("/nonexistent/sluice-fuzz-aws-keys");
        s.set("alice", "AKIDEXAMPLE0000000", std::string(secret));
        return s;
    }();
    return store;
}

std::string_view next_line(std::string_view& rest) {
    const auto nl = rest.find('\n');
    const auto line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 64 * 1024) {
        return 0;
    }
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    sigv4_request req;
    req.method = next_line(rest);
    req.path = next_line(rest);
    req.query = next_line(rest);
    while (!rest.empty()) {
        const auto line = next_line(rest);
        if (line.empty()) {
            break;
        }
        const auto colon = line.find(':');
        req.headers.emplace_back(std::string(line.substr(0, colon)),
                                 colon == std::string_view::npos ? std::string()
                                                                 : std::string(line.substr(colon + 1)));
    }
    req.body = rest;
    // A fixed clock inside the range fuzzed dates can reach.
    const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'440'938'160));
    const auto out = verify_sigv4(req, keys(), "sqs", now);
    check(out.error != sigv4_error::none);
    check(!sigv4_error_code(out.error).empty());
    check(out.message.find(secret) == std::string::npos);
    (void)sigv4_canonical_query(req.query);
    (void)sigv4_canonical_query(req.query, "X-Amz-Signature");
    (void)sigv4_uri_encode(req.path, true);
    (void)sigv4_uri_encode(req.body, false);
    return 0;
}
