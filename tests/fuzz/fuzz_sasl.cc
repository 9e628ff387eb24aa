// Fuzzes what a Kafka client sends before it is authenticated: SASL PLAIN and SCRAM
// (SHA-256 and SHA-512) client messages, against a store with one user. Any input must end in
// a challenge or a failure without crashing, a failure must never say whether the user
// exists, and nothing the server answers may carry the stored secrets.
//
// The first byte picks the exchange:
//   0: PLAIN, the rest as the one client message;
//   1, 2: SCRAM-SHA-256 / -512, the rest as client-first, then (after the first 0xff byte)
//      client-final;
//   3, 4: SCRAM-SHA-256 / -512 with a well-formed client-first for the user and a
//      client-final that starts with the right channel binding and nonce, the rest after
//      them, so the fuzzer reaches the proof check;
//   5: decode_sasl_name.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "auth/credential_store.h"
#include "auth/sasl/plain.h"
#include "auth/sasl/scram.h"

using namespace sluice::auth;

namespace {

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

const credential_store& users() {
    static const credential_store store = [] {
        credential_store s("/nonexistent/sluice-fuzz-users");
        s.set("alice", make_user_credentials("alice-secret", min_scram_iterations));
        return s;
    }();
    return store;
}

void check_step(const sasl_step& step) {
    check(step.reply.find("alice-secret") == std::string::npos);
    check(step.client_error.find("alice-secret") == std::string::npos);
    if (step.what == sasl_step::outcome::failure) {
        check(!step.client_error.empty());
    }
}

/// `final_tail` after "c=biws,r=<the combined nonce>," when `with_nonce`.
void scram(hash_algorithm h, std::string_view first, std::string_view final_message,
           bool with_nonce = false) {
    scram_server server(h, users());
    auto step = server.step(first);
    check_step(step);
    if (step.what != sasl_step::outcome::challenge) {
        return;
    }
    std::string built;
    if (with_nonce) {
        // server-first is "r=NONCE,s=SALT,i=N".
        check(step.reply.starts_with("r="));
        built = "c=biws," + step.reply.substr(0, step.reply.find(',')) + ",";
        built.append(final_message);
        final_message = built;
    }
    auto last = server.step(final_message);
    check_step(last);
    // Nobody knows the password here: no input can log in.
    check(last.what != sasl_step::outcome::success);
    // The exchange is over either way.
    check(server.step(final_message).what == sasl_step::outcome::failure);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 64 * 1024) {
        return 0;
    }
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    switch (data[0] % 6) {
        case 0: {
            plain_server server(users());
            auto step = server.step(input);
            check_step(step);
            check(step.what != sasl_step::outcome::success ||
                  input.find("alice-secret") != std::string_view::npos);
            break;
        }
        case 1:
        case 2: {
            const auto split = input.find('\xff');
            scram(data[0] % 6 == 1 ? hash_algorithm::sha256 : hash_algorithm::sha512,
                  input.substr(0, split),
                  split == std::string_view::npos ? std::string_view{} : input.substr(split + 1));
            break;
        }
        case 3:
        case 4:
            scram(data[0] % 6 == 3 ? hash_algorithm::sha256 : hash_algorithm::sha512,
                  "n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL", input, true);
            break;
        default:
            (void)decode_sasl_name(input);
            break;
    }
    return 0;
}
