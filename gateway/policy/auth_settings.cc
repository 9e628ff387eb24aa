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

std::vector<std::string> split_list(const std::string& text, char separator) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(separator, start);
        if (end == std::string::npos) {
            end = text.size();
        }
        std::string item = text.substr(start, end - start);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (!item.empty()) {
            out.push_back(std::move(item));
        }
        start = end + 1;
    }
    return out;
}

auth::authorizer_settings read_authorizer_settings(const config& cfg) {
    auth::authorizer_settings s;
    s.enabled = cfg.get_bool("authorizer.enabled", false);
    s.allow_everyone_if_no_acl_found = cfg.get_bool("allow.everyone.if.no.acl.found", false);
    for (auto& item : split_list(cfg.get_string("super.users", ""), ';')) {
        const auto colon = item.find(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == item.size()) {
            throw config_error("super.users: '" + item +
                               "' is not a principal (expected User:NAME, ';' between)");
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
    jwt_key_files files;
    files.jwks = cfg.get_string("sasl.oauthbearer.jwks.location", "");
    // Kafka's setting takes a URL; a file: URL names a local JWKS file, which is what we read.
    const std::string jwks_url = cfg.get_string("sasl.oauthbearer.jwks.endpoint.url", "");
    if (files.jwks.empty() && !jwks_url.empty()) {
        if (!jwks_url.starts_with("file:")) {
            throw config_error("sasl.oauthbearer.jwks.endpoint.url: only file: URLs are "
                               "supported (sluice does not fetch keys over the network)");
        }
        files.jwks = jwks_url.substr(5);
        while (files.jwks.starts_with("//")) {
            files.jwks.erase(0, 1);
        }
    }
    files.pems = split_comma_list(cfg.get_string("sasl.oauthbearer.public.key.locations", ""));
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
    auth::jwt_settings s;
    s.expected_audience =
        split_comma_list(cfg.get_string("sasl.oauthbearer.expected.audience", ""));
    s.expected_issuer = cfg.get_string("sasl.oauthbearer.expected.issuer", "");
    s.subject_claim = cfg.get_string("sasl.oauthbearer.sub.claim.name", "sub");
    const auto skew = cfg.get_int("sasl.oauthbearer.clock.skew.seconds", 30);
    if (skew < 0 || skew > 3600) {
        throw config_error("sasl.oauthbearer.clock.skew.seconds: must be 0..3600");
    }
    s.clock_skew = std::chrono::seconds(skew);
    const auto max_bytes = cfg.get_int("sasl.oauthbearer.max.token.bytes", 16384);
    if (max_bytes < 256 || max_bytes > 1048576) {
        throw config_error("sasl.oauthbearer.max.token.bytes: must be 256..1048576");
    }
    s.max_token_bytes = static_cast<std::size_t>(max_bytes);
    if (s.subject_claim.empty()) {
        throw config_error("sasl.oauthbearer.sub.claim.name: must not be empty");
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
