#include "gateway/core/tls_settings.h"

#include <algorithm>
#include <cctype>

#include "gateway/core/settings.h"

namespace sluice::gateway {
namespace {

namespace key {
constexpr setting certificate{
    .name = "ssl.certificate.location",
    .doc = "TLS listeners: the server's certificate chain, PEM, leaf first (required for SSL and "
           "SASL_SSL)"};
constexpr setting private_key{
    .name = "ssl.key.location",
    .doc = "TLS listeners: the certificate's private key, PEM, unencrypted (required)"};
constexpr setting ca{
    .name = "ssl.ca.location",
    .doc = "TLS listeners: PEM CAs that sign client certificates (needed for `ssl.client.auth`)"};
constexpr setting client_auth{
    .name = "ssl.client.auth", .default_value = "none",
    .doc = "`none`, `requested` or `required`: whether TLS clients present a certificate (on "
           "HTTPS, its mapped subject is the principal when http.authentication or SigV4 names "
           "none)"};
constexpr setting principal_rules{
    .name = "ssl.principal.mapping.rules", .default_value = "DEFAULT",
    .doc = "Kafka's rules from a client certificate's subject to the principal's name"};
}  // namespace key

constexpr setting tls_settings_table[] = {key::certificate, key::private_key, key::ca,
                                          key::client_auth, key::principal_rules};

/// The listeners a TLS key may be prefixed for: the Kafka security protocols with TLS, the
/// HTTPS listener (--http https://) and the SQS one (--sqs https://).
constexpr std::string_view listener_names[] = {"ssl", "sasl_ssl", "https", "sqs"};

}  // namespace

const setting_table& tls_setting_table() {
    static const setting_table table{.module = "tls",
                                     .title = "TLS listeners",
                                     .settings = tls_settings_table,
                                     .prefix = "listener.name.<name>.",
                                     .prefix_names = listener_names};
    return table;
}

std::string tls_listener_name(security_protocol p) {
    std::string name(to_string(p));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return name;
}

auth::tls_settings read_tls_settings(const config& cfg, const std::string& name) {
    const config_values v(cfg);
    const std::string prefix = "listener.name." + name + ".";
    auth::tls_settings s;
    s.certificate = v.get_string(key::certificate, prefix);
    s.key = v.get_string(key::private_key, prefix);
    s.ca = v.get_string(key::ca, prefix);
    try {
        s.client = auth::parse_client_auth(v.get_string(key::client_auth, prefix));
    } catch (const auth::tls_error& e) {
        throw config_error(e.what());
    }
    s.principal_rules = v.get_string(key::principal_rules, prefix);
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
