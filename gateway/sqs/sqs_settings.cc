#include "gateway/sqs/sqs_settings.h"

#include "gateway/core/settings.h"

namespace sluice::gateway::sqs {
namespace {

namespace key {
constexpr setting authentication{
    .name = "sqs.authentication", .default_value = "none",
    .doc = "sluice's: `none` or `sigv4` (AWS Signature Version 4 with the keys of `sluice users "
           "set --aws-access-key-id`; [security.md](security.md))"};
constexpr setting region{
    .name = "sqs.region", .default_value = "us-east-1",
    .doc = "the region in queue ARNs (`arn:aws:sqs:<region>:<account>:<queue>`)"};
constexpr setting account{
    .name = "sqs.account.id", .default_value = "000000000000",
    .doc = "the account in queue URLs and ARNs (12 digits), and every message's SenderId"};
constexpr setting advertised_url{
    .name = "sqs.advertised.url",
    .doc = "scheme and authority queue URLs start with (`https://sqs.example:443`); unset: "
           "`http://` (`https://` on an HTTPS listener) and the request's Host header"};
constexpr setting fleet_url{
    .name = "sqs.fleet.url",
    .doc = "upstream mode: this gateway's own SQS base URL as the other gateways of the fleet "
           "reach it (`http://10.0.0.5:9324`), where they forward SQS requests while it owns "
           "the queues; unset: `http://` and the SQS listener's address (`127.0.0.1` for a "
           "wildcard one)"};
constexpr setting fleet_session_timeout{
    .name = "sqs.fleet.session.timeout.ms", .type = setting_type::integer,
    .default_value = "10000",
    .doc = "upstream mode: the session timeout of the queue owner group `_sluice_queue_owner`: "
           "how long an owner that went silent (killed, stopped, cut off) keeps the SQS queues "
           "before another gateway takes them over (members heartbeat every 3 s: at least "
           "6000)",
    .unit = setting_unit::milliseconds, .min = 6000, .max = 300000};
}  // namespace key

constexpr setting sqs_settings_table[] = {key::authentication, key::region, key::account,
                                          key::advertised_url, key::fleet_url,
                                          key::fleet_session_timeout};

}  // namespace

const setting_table& sqs_setting_table() {
    static const setting_table table{
        .module = "sqs", .title = "SQS front", .settings = sqs_settings_table};
    return table;
}

sqs_front_config read_sqs_settings(const config& cfg) {
    const config_values v(cfg);
    sqs_front_config s;
    const std::string auth = v.get_string(key::authentication);
    if (auth != "none" && auth != "sigv4") {
        v.fail(key::authentication, "must be none or sigv4");
    }
    s.sigv4 = auth == "sigv4";
    s.front.region = v.get_string(key::region);
    s.front.account = v.get_string(key::account);
    if (s.front.account.size() != 12 ||
        s.front.account.find_first_not_of("0123456789") != std::string::npos) {
        v.fail(key::account, "must be 12 digits");
    }
    if (s.front.region.empty() || s.front.region.find_first_of(":/ ") != std::string::npos) {
        v.fail(key::region, "must be a region name such as us-east-1");
    }
    s.front.advertised_url = v.get_string(key::advertised_url);
    while (!s.front.advertised_url.empty() && s.front.advertised_url.back() == '/') {
        s.front.advertised_url.pop_back();
    }
    if (!s.front.advertised_url.empty() && !s.front.advertised_url.starts_with("http://") &&
        !s.front.advertised_url.starts_with("https://")) {
        v.fail(key::advertised_url, "must start with http:// or https://");
    }
    s.fleet_url = v.get_string(key::fleet_url);
    while (!s.fleet_url.empty() && s.fleet_url.back() == '/') {
        s.fleet_url.pop_back();
    }
    if (!s.fleet_url.empty() && !s.fleet_url.starts_with("http://")) {
        v.fail(key::fleet_url, "must start with http:// (the fleet forwards over plain HTTP)");
    }
    s.fleet_session_timeout = v.get_ms(key::fleet_session_timeout);
    if (auto own = origin_of_url(s.front.advertised_url)) {
        s.front.origins.own_origins.push_back(std::move(*own));
    }
    return s;
}

}  // namespace sluice::gateway::sqs
