#include "gateway/kafka/kafka_settings.h"

#include <algorithm>

#include "auth/sasl/sasl_server.h"
#include "gateway/core/settings.h"

namespace sluice::gateway {
namespace {

constexpr std::int64_t int_max = 2147483647;

namespace key {
constexpr setting node_id{.name = "node.id", .type = setting_type::integer, .default_value = "0",
                          .doc = "this broker's id (Kafka's older `broker.id` is read too)",
                          .min = 0, .max = int_max, .alias = "broker.id"};
constexpr setting auto_create{
    .name = "auto.create.topics.enable", .type = setting_type::boolean, .default_value = "true",
    .doc = "create unknown topics when a client asks for them in Metadata (as Kafka, a Kafka "
           "Produce to an unknown topic is UNKNOWN_TOPIC_OR_PARTITION and creates nothing), and "
           "when the HTTP front produces to them (REST v2, v3, WebSocket `produce`; "
           "[http.md](http.md#produce))"};
constexpr setting num_partitions{
    .name = "num.partitions", .type = setting_type::integer, .default_value = "1",
    .doc = "partitions of an auto-created topic (and of CreateTopics with -1)", .min = 1};
constexpr setting delete_topic{.name = "delete.topic.enable", .type = setting_type::boolean,
                               .default_value = "true", .doc = "allow DeleteTopics"};
constexpr setting max_request{
    .name = "socket.request.max.bytes", .type = setting_type::integer,
    .default_value = "104857600", .doc = "largest request frame; bigger frames close the connection",
    .unit = setting_unit::bytes, .min = 1024};
constexpr setting idle{.name = "connections.max.idle.ms", .type = setting_type::integer,
                       .default_value = "600000",
                       .doc = "idle connections are closed after this long",
                       .unit = setting_unit::milliseconds};
constexpr setting sasl_mechanisms{
    .name = "sasl.enabled.mechanisms", .type = setting_type::list,
    .default_value = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    .doc = "what SaslHandshake offers on SASL listeners; users come from `sluice users set` "
           "(DATA_DIR/credentials). `OAUTHBEARER` may be added once token keys are configured "
           "(below; [security.md](security.md))"};
constexpr setting max_reauth{
    .name = "connections.max.reauth.ms", .type = setting_type::integer, .default_value = "0",
    .doc = "KIP-368: the longest a SASL session lasts (less when its token expires sooner); "
           "SaslAuthenticate v1+ tells the client, which may log in again on the same "
           "connection; after it, any request but SaslHandshake/SaslAuthenticate closes the "
           "connection. `0`: sessions do not end",
    .unit = setting_unit::milliseconds, .min = 0, .range = "0 (off) or a positive time"};
constexpr setting max_in_flight{.name = "max.in.flight.requests", .type = setting_type::integer,
                                .default_value = "64",
                                .doc = "pipelined requests read ahead per connection"};
constexpr setting queued_bytes{
    .name = "queued.max.request.bytes", .type = setting_type::integer,
    .default_value = "268435456",
    .doc = "bytes of requests read but not yet answered, across all Kafka connections; `-1`: "
           "no bound (Kafka's default). See below",
    .unit = setting_unit::bytes, .min = -1, .range = "-1 (no bound) or a positive size",
    .zero_allowed = false};
constexpr setting queued_requests{
    .name = "queued.max.requests", .type = setting_type::integer, .default_value = "500",
    .doc = "requests read but not yet answered, across all Kafka connections (Kafka's default)",
    .min = 1, .max = int_max};
constexpr setting fetch_response_max{
    .name = "fetch.response.max.bytes", .type = setting_type::integer, .default_value = "-1",
    .doc = "sluice's own: the most one Fetch response carries, whatever the client allows. `-1` "
           "adapts per connection: about 1 GB/s times the connection's minimum round-trip time, "
           "at least 1 MiB (1 MiB on loopback and LAN, 50 MB at 50 ms). `0` leaves only the "
           "client's `fetch.max.bytes` / `max.partition.fetch.bytes`. Clients parse a response "
           "in one pass once it is whole; at 50 MB that pass runs out of the CPU cache and "
           "librdkafka consumes a third as fast (docs/benchmarks.md). Partitions left out of a "
           "capped response come first in a later one.",
    .unit = setting_unit::bytes, .min = -1, .range = "-1 (adaptive), 0 (off) or a size"};
}  // namespace key

constexpr setting kafka_settings_table[] = {
    key::auto_create,   key::num_partitions, key::delete_topic,   key::max_request,
    key::idle,          key::sasl_mechanisms, key::max_reauth,    key::max_in_flight,
    key::queued_bytes,  key::queued_requests, key::node_id,       key::fetch_response_max,
};

/// sasl.enabled.mechanisms: Kafka's mechanism names, each once.
std::vector<std::string> read_sasl_mechanisms(const config_values& v) {
    const auto& supported = auth::supported_sasl_mechanisms();
    std::vector<std::string> out;
    for (const auto& name : v.get_list(key::sasl_mechanisms)) {
        if (name == "GSSAPI") {
            v.fail(key::sasl_mechanisms, name + " is not yet supported");
        }
        if (std::find(supported.begin(), supported.end(), name) == supported.end()) {
            v.fail(key::sasl_mechanisms, "unknown mechanism '" + name +
                                             "' (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)");
        }
        if (std::find(out.begin(), out.end(), name) == out.end()) {
            out.push_back(name);
        }
    }
    if (out.empty()) {
        v.fail(key::sasl_mechanisms, "name at least one mechanism");
    }
    return out;
}

}  // namespace

const setting_table& kafka_setting_table() {
    static const setting_table table{
        .module = "kafka", .title = "Kafka front", .settings = kafka_settings_table};
    return table;
}

kafka_settings read_kafka_settings(const config& cfg, const std::string& cluster_id) {
    const config_values v(cfg);
    kafka_settings k;
    k.cluster_id = cluster_id;
    k.node_id = static_cast<std::int32_t>(v.get_int(key::node_id));
    k.advertised = cfg.advertise_kafka ? *cfg.advertise_kafka : endpoint{"", 0, true};
    k.auto_create_topics = v.get_bool(key::auto_create);
    k.num_partitions = static_cast<std::int32_t>(v.get_int(key::num_partitions));
    k.max_request_bytes = v.get_int(key::max_request);
    k.idle_timeout_ms = v.get_int(key::idle);
    k.max_in_flight = static_cast<std::int32_t>(v.get_int(key::max_in_flight));
    k.delete_topic_enable = v.get_bool(key::delete_topic);
    k.fetch_response_max_bytes = v.get_int(key::fetch_response_max);
    k.queued_max_request_bytes = v.get_int(key::queued_bytes);
    k.queued_max_requests = static_cast<std::int32_t>(v.get_int(key::queued_requests));
    k.sasl_mechanisms = read_sasl_mechanisms(v);
    k.max_reauth_ms = v.get_int(key::max_reauth);
    return k;
}

}  // namespace sluice::gateway
