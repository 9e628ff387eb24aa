#include "gateway/policy/auth_settings.h"

#include <stdexcept>

namespace sluice::gateway {

void count_authentication(metrics_registry& metrics, std::string_view front,
                          std::string_view mechanism, bool ok) {
    const labels l{{"front", std::string(front)}, {"mechanism", std::string(mechanism)}};
    metrics.get_counter("sluice_authentications_total", "Authentication attempts", l).inc();
    if (!ok) {
        metrics
            .get_counter("sluice_authentication_failures_total", "Failed authentication attempts",
                         l)
            .inc();
    }
}

void register_authentication_metrics(metrics_registry& metrics,
                                     const std::vector<std::string>& mechanisms) {
    for (const auto& m : mechanisms) {
        const labels l{{"front", "kafka"}, {"mechanism", m}};
        metrics.get_counter("sluice_authentications_total", "Authentication attempts", l);
        metrics.get_counter("sluice_authentication_failures_total",
                            "Failed authentication attempts", l);
    }
}

namespace {

namespace key {
constexpr setting authorizer_enabled{
    .name = "authorizer.enabled", .type = setting_type::boolean, .default_value = "false",
    .doc = "check every request on every front (Kafka, HTTP, WebSocket, SSE, SQS) against the "
           "ACLs"};
constexpr setting super_users{
    .name = "super.users",
    .doc = "`User:admin;User:ops` (`;`-separated): principals that pass every check",
    .shown_default = "empty"};
constexpr setting allow_everyone{
    .name = "allow.everyone.if.no.acl.found", .type = setting_type::boolean,
    .default_value = "false",
    .doc = "a resource with no ACL at all is open to every principal; one with any ACL follows "
           "its ACLs"};

constexpr setting jwks_location{
    .name = "sasl.oauthbearer.jwks.location",
    .doc = "sluice's: a JWKS file (RSA and EC P-256 keys) OAUTHBEARER and HTTP Bearer tokens are "
           "checked against"};
constexpr setting jwks_url{
    .name = "sasl.oauthbearer.jwks.endpoint.url",
    .doc = "Kafka's name, accepted with a `file:` URL (a local JWKS file; sluice does not fetch "
           "keys over the network)"};
constexpr setting public_keys{
    .name = "sasl.oauthbearer.public.key.locations", .type = setting_type::list,
    .doc = "sluice's: a comma list of PEM public key files (RSA of 2048 bits or more, EC "
           "P-256); a key's `kid` is its file name without extension"};
constexpr setting audience{
    .name = "sasl.oauthbearer.expected.audience", .type = setting_type::list,
    .doc = "a comma list; when set, a token's `aud` must hold one of them"};
constexpr setting issuer{.name = "sasl.oauthbearer.expected.issuer",
                         .doc = "when set, a token's `iss` must equal it"};
constexpr setting sub_claim{.name = "sasl.oauthbearer.sub.claim.name", .default_value = "sub",
                            .doc = "the claim that names the principal (`User:<claim>`)"};
constexpr setting clock_skew{
    .name = "sasl.oauthbearer.clock.skew.seconds", .type = setting_type::integer,
    .default_value = "30", .doc = "tolerance for `exp` and `nbf`", .unit = setting_unit::seconds,
    .min = 0, .max = 3600};
constexpr setting max_token{
    .name = "sasl.oauthbearer.max.token.bytes", .type = setting_type::integer,
    .default_value = "16384", .doc = "sluice's: longer tokens are refused before any parsing",
    .unit = setting_unit::bytes, .min = 256, .max = 1048576};
}  // namespace key

constexpr setting authorizer_settings_table[] = {key::authorizer_enabled, key::super_users,
                                                 key::allow_everyone};
constexpr setting token_settings_table[] = {key::jwks_location, key::jwks_url, key::public_keys,
                                            key::audience,      key::issuer,   key::sub_claim,
                                            key::clock_skew,    key::max_token};

}  // namespace

const setting_table& token_setting_table() {
    static const setting_table table{
        .module = "tokens", .title = "OAUTHBEARER and Bearer tokens",
        .settings = token_settings_table};
    return table;
}

const setting_table& authorizer_setting_table() {
    static const setting_table table{
        .module = "authorizer", .title = "Authorization", .settings = authorizer_settings_table};
    return table;
}

auth::authorizer_settings read_authorizer_settings(const config& cfg) {
    const config_values v(cfg);
    auth::authorizer_settings s;
    s.enabled = v.get_bool(key::authorizer_enabled);
    s.allow_everyone_if_no_acl_found = v.get_bool(key::allow_everyone);
    for (auto& item : split_list(v.get_string(key::super_users), ';')) {
        const auto colon = item.find(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == item.size()) {
            v.fail(key::super_users,
                   "'" + item + "' is not a principal (expected User:NAME, ';' between)");
        }
        s.super_users.push_back(std::move(item));
    }
    return s;
}

namespace {

struct jwt_key_files {
    std::string jwks;
    std::vector<std::string> pems;
    bool empty() const { return jwks.empty() && pems.empty(); }
};

jwt_key_files read_jwt_key_files(const config& cfg) {
    const config_values v(cfg);
    jwt_key_files files;
    files.jwks = v.get_string(key::jwks_location);
    // Kafka's setting takes a URL; a file: URL names a local JWKS file, which is what we read.
    const std::string jwks_url = v.get_string(key::jwks_url);
    if (files.jwks.empty() && !jwks_url.empty()) {
        if (!jwks_url.starts_with("file:")) {
            v.fail(key::jwks_url, "only file: URLs are supported (sluice does not fetch keys "
                                  "over the network)");
        }
        files.jwks = jwks_url.substr(5);
        while (files.jwks.starts_with("//")) {
            files.jwks.erase(0, 1);
        }
    }
    files.pems = v.get_list(key::public_keys);
    return files;
}

auth::jwt_key_set load_jwt_keys(const jwt_key_files& files) {
    auth::jwt_key_set keys;
    try {
        if (!files.jwks.empty()) {
            keys.load_jwks_file(files.jwks);
        }
        for (const auto& p : files.pems) {
            keys.load_pem_file(p);
        }
    } catch (const std::runtime_error& e) {
        throw config_error(std::string("OAUTHBEARER keys: ") + e.what());
    }
    if (keys.empty()) {
        throw config_error("OAUTHBEARER keys: the configured files hold no RSA or EC P-256 key");
    }
    return keys;
}

}  // namespace

std::unique_ptr<auth::jwt_verifier> read_jwt_verifier(const config& cfg) {
    const auto files = read_jwt_key_files(cfg);
    const config_values v(cfg);
    auth::jwt_settings s;
    s.expected_audience = v.get_list(key::audience);
    s.expected_issuer = v.get_string(key::issuer);
    s.subject_claim = v.get_string(key::sub_claim);
    s.clock_skew = std::chrono::seconds(v.get_int(key::clock_skew));
    s.max_token_bytes = static_cast<std::size_t>(v.get_int(key::max_token));
    if (s.subject_claim.empty()) {
        v.fail(key::sub_claim, "must not be empty");
    }
    if (files.empty()) {
        return nullptr;
    }
    return std::make_unique<auth::jwt_verifier>(load_jwt_keys(files), std::move(s));
}

std::size_t reload_jwt_keys(const config& cfg, auth::jwt_verifier& verifier) {
    auto keys = load_jwt_keys(read_jwt_key_files(cfg));
    const auto count = keys.keys().size();
    verifier.replace_keys(std::move(keys));
    return count;
}

}  // namespace sluice::gateway
