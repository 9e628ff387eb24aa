// Fuzzes the HTTP front's console session tokens (auth/session_token.h), which anyone can
// send as a Bearer token or access_token=: no input verifies unless this process issued it,
// and an issued token verifies to the principal it was issued for, whatever the principal's
// bytes.
//
// The first byte picks: even, the rest is a token to verify; odd, the rest is a principal to
// issue a token for, which must verify to it (and not under another generation).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "auth/session_token.h"

using namespace sluice::auth;

namespace {

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

const session_tokens& tokens() {
    static const session_tokens t(std::chrono::hours(1));
    return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 16 * 1024) {
        return 0;
    }
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    const auto now = session_tokens::clock::time_point(std::chrono::seconds(1'800'000'000));
    if (data[0] % 2 == 0) {
        std::string why;
        check(!tokens().verify(input, 0, now, &why));
        check(!why.empty());
        return 0;
    }
    if (input.empty() || input.size() > 1024) {
        return 0;
    }
    const auto token = tokens().issue(input, 5, now);
    const auto back = tokens().verify(token, 5, now);
    check(back.has_value() && *back == input);
    check(!tokens().verify(token, 6, now));
    check(!tokens().verify(token, 5, now + std::chrono::hours(2)));
    return 0;
}
