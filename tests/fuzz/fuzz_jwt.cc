// Fuzzes the JWT verifier (auth/jwt), which reads what anyone sends as an OAUTHBEARER token or
// an HTTP Bearer token before they are authenticated, and the JWKS reader, which reads an
// identity provider's key file.
//
// The verifier trusts one RSA key (kid r1) and one EC P-256 key (kid e1). The first byte picks:
//   0: the rest as a token: it never verifies, the refusal has a reason, and a long token never
//      appears in that reason;
//   1: the rest as an OAUTHBEARER client message: it never logs in and a failure says why;
//   2: the rest as a JWKS document: it is read or refused with std::runtime_error, nothing else;
//   3: the rest as a header and a payload (split at the first 0xff byte), signed with the EC key
//      by this harness: the token verifies exactly when its claims hold (alg ES256, a kid that is
//      absent or e1, no crit, an exp not past, an nbf not in the future, a string sub), and then
//      to the payload's own sub and exp.
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "auth/jwt/jwt.h"
#include "auth/sasl/oauthbearer.h"
#include "protocol/core/json.h"
#include "tests/auth/jwt_test_support.h"

using namespace sluice::auth;

namespace {

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

constexpr std::int64_t now_s = 1'800'000'000;
const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(now_s));

struct fixture {
    test::pkey_ptr rsa = test::make_rsa_key();
    test::pkey_ptr ec = test::make_ec_key();
    jwt_verifier verifier{keys(), {}};

    jwt_key_set keys() const {
        jwt_key_set k;
        k.add_jwks(R"({"keys":[)" + test::jwk_json(rsa, "r1") + "," + test::jwk_json(ec, "e1") +
                   "]}");
        return k;
    }
};

const fixture& keys() {
    static const fixture f;
    return f;
}

/// Whether the verifier must accept a token signed with the EC key carrying these texts, and
/// the payload's sub and exp when it must.
bool should_verify(std::string_view header_json, std::string_view payload_json, std::string& sub,
                   std::int64_t& exp) {
    rapidjson::Document header_doc;
    if (!sluice::protocol::parse_json(header_doc, header_json) || !header_doc.IsObject()) {
        return false;
    }
    const rapidjson::Value& header = header_doc;
    auto alg = header.FindMember("alg");
    if (alg == header.MemberEnd() || !alg->value.IsString() ||
        std::string_view(alg->value.GetString(), alg->value.GetStringLength()) != "ES256") {
        return false;
    }
    auto kid = header.FindMember("kid");
    if (kid != header.MemberEnd() && kid->value.IsString() &&
        std::string_view(kid->value.GetString(), kid->value.GetStringLength()) != "e1" &&
        kid->value.GetStringLength() != 0) {
        return false;
    }
    if (header.HasMember("crit")) {
        return false;
    }
    rapidjson::Document payload_doc;
    if (!sluice::protocol::parse_json(payload_doc, payload_json) || !payload_doc.IsObject()) {
        return false;
    }
    const rapidjson::Value& payload = payload_doc;
    const auto time = [&](const char* name, bool& present) -> std::optional<std::int64_t> {
        auto it = payload.FindMember(name);
        present = it != payload.MemberEnd();
        if (!present) {
            return std::nullopt;
        }
        if (it->value.IsInt64()) {
            return it->value.GetInt64();
        }
        if (it->value.IsNumber() && std::isfinite(it->value.GetDouble()) &&
            std::fabs(it->value.GetDouble()) < 1e15) {
            return static_cast<std::int64_t>(std::floor(it->value.GetDouble()));
        }
        return std::nullopt;
    };
    bool present = false;
    const auto e = time("exp", present);
    if (!e || *e < now_s - 30) {
        return false;
    }
    const auto n = time("nbf", present);
    if (present && (!n || now_s + 30 < *n)) {
        return false;
    }
    auto s = payload.FindMember("sub");
    if (s == payload.MemberEnd() || !s->value.IsString() || s->value.GetStringLength() == 0) {
        return false;
    }
    sub.assign(s->value.GetString(), s->value.GetStringLength());
    exp = *e;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 32 * 1024) {
        return 0;
    }
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    const auto& f = keys();
    switch (data[0] % 4) {
        case 0: {
            auto verdict = f.verifier.verify(input, now);
            check(!verdict);
            check(!verdict.error().empty());
            check(input.size() < 96 || verdict.error().find(input) == std::string::npos);
            break;
        }
        case 1: {
            oauthbearer_server server(&f.verifier);
            auto step = server.step(input);
            check(step.what != sasl_step::outcome::success);
            if (step.what == sasl_step::outcome::failure) {
                check(!step.client_error.empty());
            }
            break;
        }
        case 2: {
            jwt_key_set set;
            try {
                set.add_jwks(input);
            } catch (const std::runtime_error&) {
                check(set.empty());
            }
            for (const auto& k : set.keys()) {
                check(k.pkey != nullptr);
            }
            break;
        }
        default: {
            const auto split = input.find('\xff');
            const auto header = input.substr(0, split);
            const auto payload =
                split == std::string_view::npos ? std::string_view{} : input.substr(split + 1);
            const auto token = test::sign_parts(f.ec, header, payload);
            auto verdict = f.verifier.verify(token, now);
            std::string sub;
            std::int64_t exp = 0;
            const bool expected = should_verify(header, payload, sub, exp);
            check(verdict.has_value() == expected);
            if (expected) {
                check(verdict->subject == sub);
                check(verdict->expires_at == exp);
                check(verdict->alg == "ES256");
            } else {
                check(!verdict.error().empty());
            }
            break;
        }
    }
    return 0;
}
