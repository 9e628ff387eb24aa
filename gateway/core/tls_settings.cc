#include "gateway/core/tls_settings.h"

#include <algorithm>
#include <cctype>

namespace sluice::gateway {
namespace {

constexpr const char* tls_keys[] = {
    "ssl.certificate.location", "ssl.key.location", "ssl.ca.location", "ssl.client.auth",
    "ssl.principal.mapping.rules",
};

constexpr const char* listener_names[] = {"ssl", "sasl_ssl", "https", "sqs"};

}  // namespace

std::string tls_listener_name(security_protocol p) {
    std::string name(to_string(p));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return name;
}

auth::tls_settings read_tls_settings(const config& cfg, const std::string& name) {
    for (const char* key : tls_keys) {
        cfg.mark_known(key);
        for (const char* l : listener_names) {
            cfg.mark_known("listener.name." + std::string(l) + "." + key);
        }
    }
    const std::string prefix = "listener.name." + name + ".";
    auto get = [&](const std::string& key, const std::string& fallback) {
        return cfg.get_string(prefix + key, cfg.get_string(key, fallback));
    };
    auth::tls_settings s;
    s.certificate = get("ssl.certificate.location", "");
    s.key = get("ssl.key.location", "");
    s.ca = get("ssl.ca.location", "");
    try {
        s.client = auth::parse_client_auth(get("ssl.client.auth", "none"));
    } catch (const auth::tls_error& e) {
        throw config_error(e.what());
    }
    s.principal_rules = get("ssl.principal.mapping.rules", "DEFAULT");
    return s;
}

std::shared_ptr<auth::tls_context_holder> open_tls_listener_context(const config& cfg,
                                                                    const std::string& name,
                                                                    const std::string& what) {
    auth::tls_settings s = read_tls_settings(cfg, name);
    if (s.certificate.empty() || s.key.empty()) {
        throw config_error(what + ": needs ssl.certificate.location and ssl.key.location (or "
                           "listener.name." + name + ".ssl.certificate.location and "
                           "listener.name." + name + ".ssl.key.location)");
    }
    try {
        return std::make_shared<auth::tls_context_holder>(std::move(s));
    } catch (const auth::tls_error& e) {
        throw config_error(what + ": " + e.what());
    }
}

}  // namespace sluice::gateway
