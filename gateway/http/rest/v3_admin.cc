// REST Proxy API v3 administration over the client level's admin (api::admin), in the REST
// Proxy's shapes (api/v3/openapi.yaml): brokers (GET .../brokers[/{broker_id}[/configs]]),
// topics (POST .../topics to create, validate_only too; DELETE .../topics/{t}; PATCH
// .../topics/{t} with partitions_count to add partitions), topic configs (GET
// .../configs[/{name}], PUT and DELETE .../configs/{name}, POST .../configs:alter, GET
// .../default-configs: what a new topic gets), and the
// same for a broker's configs (.../brokers/{b}/configs..., .../brokers/-/configs) and the
// cluster-wide defaults (.../broker-configs...). The router's
// guard checks each route's Kafka operation (gateway/policy/front_acls.cc: DELETE, ALTER,
// DESCRIBE_CONFIGS, ALTER_CONFIGS); creating a topic checks CREATE here (the cluster's, else
// the topic's).
// Consumer groups are in v3_groups.cc.
#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <variant>

#include "gateway/http/rest/rest_routes.h"
#include "gateway/http/rest/v3_support.h"

#include "backend/api/sluice_topics.h"

namespace sluice::gateway::rest {
namespace api = backend::api;
using boost::beast::http::verb;

namespace {

std::string_view source_name(api::config_source s) {
    switch (s) {
        case api::config_source::dynamic_topic: return "DYNAMIC_TOPIC_CONFIG";
        case api::config_source::dynamic_broker: return "DYNAMIC_BROKER_CONFIG";
        case api::config_source::dynamic_default_broker: return "DYNAMIC_DEFAULT_BROKER_CONFIG";
        case api::config_source::static_broker: return "STATIC_BROKER_CONFIG";
        case api::config_source::default_config: return "DEFAULT_CONFIG";
        case api::config_source::dynamic_broker_logger: return "DYNAMIC_BROKER_LOGGER_CONFIG";
        case api::config_source::client_metrics: return "CLIENT_METRICS_CONFIG";
        case api::config_source::dynamic_group: return "DYNAMIC_GROUP_CONFIG";
        case api::config_source::unknown: return "UNKNOWN";
    }
    return "UNKNOWN";
}

acl_check topic_acl(auth::acl_operation op, std::string_view topic) {
    return acl_check{op, auth::resource_type::topic, std::string(topic)};
}

/// What every config entry shows after its identity: name, value, is_default, is_read_only,
/// is_sensitive, source and synonyms.
void write_config_fields(json::writer& w, const api::config_entry& e) {
    w.field("name", e.name);
    if (e.value) {
        w.field("value", *e.value);
    } else {
        w.null_field("value");
    }
    w.key("is_default");
    w.boolean(e.source == api::config_source::default_config);
    w.key("is_read_only");
    w.boolean(e.read_only);
    w.key("is_sensitive");
    w.boolean(false);
    w.field("source", source_name(e.source));
    w.key("synonyms");
    w.start_array();
    for (const auto& syn : e.synonyms) {
        w.start_object();
        w.field("name", syn.name);
        if (syn.value) {
            w.field("value", *syn.value);
        } else {
            w.null_field("value");
        }
        w.field("source", source_name(syn.source));
        w.end_object();
    }
    w.end_array();
}

// --- brokers ---------------------------------------------------------------------------------

void write_broker(json::writer& w, const v3_links& l, const api::broker_info& b) {
    const std::string self = l.of_cluster() + "/brokers/" + std::to_string(b.node_id);
    w.start_object();
    w.field("kind", "KafkaBroker");
    metadata(w, self, l.crn() + "/broker=" + std::to_string(b.node_id));
    w.field("cluster_id", l.cluster);
    w.field("broker_id", b.node_id);
    w.field("host", b.host);
    w.field("port", b.port);
    if (b.rack) {
        w.field("rack", *b.rack);
    } else {
        w.null_field("rack");
    }
    related(w, "configs", self + "/configs");
    related(w, "partition_replicas", self + "/partition-replicas");
    w.end_object();
}

boost::asio::awaitable<handler_result> v3_list_brokers(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto cluster = co_await rc->admin().describe_cluster();
    if (!cluster) {
        co_return v3_backend_error(cluster.error());
    }
    const auto l = links_for(rc, ctx);
    const auto items = [&](json::writer& w) {
        for (const auto& b : cluster->brokers) {
            write_broker(w, l, b);
        }
    };
    co_return v3_ok(v3_list_body("KafkaBrokerList", l.of_cluster() + "/brokers", items));
}

boost::asio::awaitable<handler_result> v3_get_broker(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto cluster = co_await rc->admin().describe_cluster();
    if (!cluster) {
        co_return v3_backend_error(cluster.error());
    }
    const auto id = parse_partition(*ctx.params.get("broker_id"));
    for (const auto& b : cluster->brokers) {
        if (id && b.node_id == *id) {
            json::writer w;
            write_broker(w, links_for(rc, ctx), b);
            co_return v3_ok(w.str());
        }
    }
    co_return v3_error(code::not_found,
                       "Broker " + std::string(*ctx.params.get("broker_id")) + " cannot be found.");
}

/// GET .../brokers/{b}/configs: the broker's configs (DESCRIBE_CONFIGS on the cluster).
boost::asio::awaitable<handler_result> v3_list_broker_configs(rest_context* rc,
                                                              http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const auto id = parse_partition(*ctx.params.get("broker_id"));
    if (!id) {
        co_return v3_error(code::not_found, "Broker " +
                                                std::string(*ctx.params.get("broker_id")) +
                                                " cannot be found.");
    }
    auto configs = co_await rc->admin().describe_broker_configs(*id);
    if (!configs) {
        if (configs.error().reason() == api::errc::invalid_request) {
            co_return v3_error(code::not_found, "Broker " + std::to_string(*id) +
                                                    " cannot be found.");
        }
        co_return v3_backend_error(configs.error());
    }
    const auto l = links_for(rc, ctx);
    const std::string broker = l.of_cluster() + "/brokers/" + std::to_string(*id);
    const auto items = [&](json::writer& w) {
        for (const auto& e : *configs) {
            w.start_object();
            w.field("kind", "KafkaBrokerConfig");
            metadata(w, broker + "/configs/" + url_segment(e.name),
                     l.crn() + "/broker=" + std::to_string(*id) + "/config=" + e.name);
            w.field("cluster_id", l.cluster);
            w.field("broker_id", *id);
            write_config_fields(w, e);
            w.end_object();
        }
    };
    co_return v3_ok(v3_list_body("KafkaBrokerConfigList", broker + "/configs", items));
}

// --- topics ----------------------------------------------------------------------------------

boost::asio::awaitable<handler_result> v3_create_topic(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v3_type)) {
        co_return std::move(*bad);
    }
    if (!doc.IsObject()) {
        co_return v3_error(code::bad_request, "The request body must be a JSON object");
    }
    const auto name = json::get_string(doc, "topic_name");
    if (!name || name->empty()) {
        co_return v3_error(code::bad_request, "topic_name is required");
    }
    api::new_topic spec;
    spec.name = topic_name(std::string(*name));
    spec.partitions = static_cast<std::int32_t>(
        json::get_int(doc, "partitions_count").value_or(1));
    if (const auto rf = json::get_int(doc, "replication_factor"); rf && *rf > 1) {
        // The cluster decides what it can place; a one-node cluster has one replica.
        auto cluster = co_await rc->admin().describe_cluster();
        if (cluster && static_cast<std::int64_t>(cluster->brokers.size()) < *rf) {
            co_return v3_error(code::kafka_bad_request,
                               "Replication factor: " + std::to_string(*rf) +
                                   " larger than available brokers: " +
                                   std::to_string(cluster->brokers.size()) + ".");
        }
    }
    if (const auto* assignments = json::member(doc, "replicas_assignments")) {
        // {"0": [1, 2], "1": [2, 3]}: partitions 0..n-1, each on brokers of the cluster (the
        // backends place replicas themselves: the assignment is checked, then its partition
        // count is what is created).
        if (!assignments->IsObject() || assignments->MemberCount() == 0) {
            co_return v3_error(code::bad_request,
                               "replicas_assignments must map partition ids to broker ids");
        }
        auto cluster = co_await rc->admin().describe_cluster();
        if (!cluster) {
            co_return v3_backend_error(cluster.error());
        }
        const auto n = static_cast<std::int32_t>(assignments->MemberCount());
        for (const auto& m : assignments->GetObject()) {
            const std::string_view key(m.name.GetString(), m.name.GetStringLength());
            const auto p = parse_partition(key);
            if (!p || *p >= n || !m.value.IsArray() || m.value.Empty()) {
                co_return v3_error(code::kafka_bad_request,
                                   "Invalid replicas assignment for partition " +
                                       std::string(key) + ": partitions 0 to " +
                                       std::to_string(n - 1) + ", each on some brokers.");
            }
            for (const auto& b : m.value.GetArray()) {
                const bool known =
                    b.IsInt() && std::any_of(cluster->brokers.begin(), cluster->brokers.end(),
                                             [&](const auto& x) { return x.node_id == b.GetInt(); });
                if (!known) {
                    co_return v3_error(code::kafka_bad_request,
                                       "Replicas assignment of partition " + std::string(key) +
                                           " names a broker that is not in the cluster.");
                }
            }
        }
        spec.partitions = n;
    }
    if (const auto* configs = json::member(doc, "configs")) {
        if (!configs->IsArray()) {
            co_return v3_error(code::bad_request, "configs must be an array");
        }
        for (const auto& c : configs->GetArray()) {
            const auto cname = c.IsObject() ? json::get_string(c, "name") : std::nullopt;
            const auto* raw_value = c.IsObject() ? json::member(c, "value") : nullptr;
            if (raw_value != nullptr && raw_value->IsNull()) {
                continue;  // null: the default (the openapi's nullable value)
            }
            const auto cvalue = c.IsObject() ? json::get_string(c, "value") : std::nullopt;
            if (!cname || !cvalue) {
                co_return v3_error(code::bad_request,
                                   "Each config needs a string name and a string value");
            }
            spec.configs[std::string(*cname)] = std::string(*cvalue);
        }
    }
    const bool validate_only = json::get_bool(doc, "validate_only").value_or(false);
    spec.validate_only = validate_only;
    // Kafka's rule: CREATE on the cluster, else CREATE on the topic.
    if (rc->chain.authorizing()) {
        const std::string host = authorizer_host(ctx.peer);
        requester who = rest_requester(ctx);
        who.host = host;
        if (!rc->chain.visible(who, auth::acl_operation::create, auth::resource_type::cluster,
                               auth::cluster_resource_name)) {
            if (auto bad = v3_refused(rc, ctx, {topic_acl(auth::acl_operation::create, *name)})) {
                co_return std::move(*bad);
            }
        }
    }
    auto created = co_await rc->admin().create_topic(std::move(spec));
    if (!created) {
        if (created.error().reason() == api::errc::topic_already_exists) {
            // compat: TopicExistsException is a 400 with code 40002.
            co_return v3_error(code::kafka_bad_request,
                               "Topic '" + std::string(*name) + "' already exists.");
        }
        co_return v3_backend_error(created.error());
    }
    json::writer w;
    write_v3_topic(w, links_for(rc, ctx), *created);
    // The openapi: 200 for a dry run (validate_only), 201 for a topic created.
    co_return json_response(validate_only ? 200 : 201, v3_type, w.str());
}

boost::asio::awaitable<handler_result> v3_delete_topic(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const std::string topic(*ctx.params.get("topic_name"));
    if (backend::api::is_sluice_owned_topic(topic)) {
        // As the Kafka front's DeleteTopics (POLICY_VIOLATION): losing one breaks a module.
        co_return v3_error(code::kafka_bad_request,
                           "Topic " + topic + " holds sluice's own state and cannot be deleted.");
    }
    auto done = co_await rc->admin().delete_topic(topic_name(topic));
    if (!done) {
        co_return v3_backend_error(done.error());
    }
    co_return v3_no_content();
}

/// PATCH .../topics/{t}: {"partitions_count": n} raises the partition count.
boost::asio::awaitable<handler_result> v3_update_topic(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const std::string topic(*ctx.params.get("topic_name"));
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v3_type)) {
        co_return std::move(*bad);
    }
    const auto count = doc.IsObject() ? json::get_int(doc, "partitions_count") : std::nullopt;
    if (!count || *count < 1 || *count > std::numeric_limits<std::int32_t>::max()) {
        co_return v3_error(code::bad_request, "partitions_count must be a positive integer");
    }
    auto grown = co_await rc->admin().create_partitions(topic_name(topic),
                                                        static_cast<std::int32_t>(*count));
    if (!grown) {
        co_return v3_backend_error(grown.error());
    }
    auto d = co_await rc->admin().describe_topic(topic_name(topic));
    if (!d) {
        co_return v3_backend_error(d.error());
    }
    json::writer w;
    write_v3_topic(w, links_for(rc, ctx), *d);
    co_return v3_ok(w.str());
}

// --- topic configs ---------------------------------------------------------------------------

std::optional<http_response> parse_config_put(const http_request_context& ctx,
                                              std::vector<api::config_change>& changes);

void write_topic_config(json::writer& w, const v3_links& l, std::string_view topic,
                        const api::config_entry& e) {
    const std::string self = l.of_topic(topic) + "/configs/" + url_segment(e.name);
    w.start_object();
    w.field("kind", "KafkaTopicConfig");
    metadata(w, self, l.crn() + "/topic=" + std::string(topic) + "/config=" + e.name);
    w.field("cluster_id", l.cluster);
    w.field("topic_name", topic);
    write_config_fields(w, e);
    w.end_object();
}

boost::asio::awaitable<handler_result> v3_list_topic_configs(rest_context* rc,
                                                             http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const std::string topic(*ctx.params.get("topic_name"));
    auto configs = co_await rc->admin().describe_topic_configs(topic_name(topic));
    if (!configs) {
        co_return v3_backend_error(configs.error());
    }
    const auto l = links_for(rc, ctx);
    const auto items = [&](json::writer& w) {
        for (const auto& e : *configs) {
            write_topic_config(w, l, topic, e);
        }
    };
    co_return v3_ok(v3_list_body("KafkaTopicConfigList", l.of_topic(topic) + "/configs", items));
}

/// `e` as a topic without an override of its own would have it: the next synonym's value and
/// source (the broker's, the cluster's default, the static setting or Kafka's default).
api::config_entry without_topic_override(api::config_entry e) {
    std::erase_if(e.synonyms, [](const api::config_synonym& s) {
        return s.source == api::config_source::dynamic_topic;
    });
    if (e.source == api::config_source::dynamic_topic) {
        if (e.synonyms.empty()) {
            e.value.reset();  // no default the cluster names
            e.source = api::config_source::default_config;
        } else {
            e.value = e.synonyms.front().value;
            e.source = e.synonyms.front().source;
        }
    }
    return e;
}

/// Kafka's legal topic names (Topic.validate): 1-249 of [a-zA-Z0-9._-], not "." nor "..".
bool legal_topic_name(std::string_view name) {
    if (name.empty() || name.size() > 249 || name == "." || name == "..") {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

/// GET .../topics/{t}/default-configs (kafka-rest's DefaultTopicConfigsResource): the configs a
/// topic named so gets when created without configs. The cluster's defaults do not depend on
/// the name, so they are read from the topic itself without its overrides, or, for a name not
/// created yet, from any topic of the cluster the same way (kafka-rest asks a CreateTopics
/// with validate_only, which librdkafka 2.0.2 answers without configs).
boost::asio::awaitable<handler_result> v3_list_default_topic_configs(rest_context* rc,
                                                                     http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const std::string topic(*ctx.params.get("topic_name"));
    if (!legal_topic_name(topic)) {
        co_return v3_error(code::bad_request,
                           "Topic name " + topic + " is illegal: up to 249 of ASCII letters, "
                           "digits, '.', '_' and '-', not '.' nor '..'");
    }
    auto configs = co_await rc->admin().describe_topic_configs(topic_name(topic));
    if (!configs && configs.error().reason() == api::errc::unknown_topic_or_partition) {
        auto all = co_await rc->admin().list_topics();
        if (!all) {
            co_return v3_backend_error(all.error());
        }
        if (all->empty()) {
            co_return v3_error(code::not_found,
                               "The cluster has no topic to read its topic defaults from.");
        }
        configs = co_await rc->admin().describe_topic_configs(all->front().name);
    }
    if (!configs) {
        co_return v3_backend_error(configs.error());
    }
    const auto l = links_for(rc, ctx);
    const auto items = [&](json::writer& w) {
        for (auto& e : *configs) {
            write_topic_config(w, l, topic, without_topic_override(std::move(e)));
        }
    };
    co_return v3_ok(
        v3_list_body("KafkaTopicConfigList", l.of_topic(topic) + "/default-configs", items));
}

/// GET .../topics/-/configs: the configs of every topic the caller may DESCRIBE_CONFIGS.
boost::asio::awaitable<handler_result> v3_list_all_topic_configs(rest_context* rc,
                                                                 http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto all = co_await rc->admin().list_topics();
    if (!all) {
        co_return v3_backend_error(all.error());
    }
    const std::string host = authorizer_host(ctx.peer);
    requester who = rest_requester(ctx);
    who.host = host;
    std::vector<std::pair<std::string, std::vector<api::config_entry>>> found;
    for (const auto& t : *all) {
        if (is_sluice_topic(t.name.value) ||
            !rc->chain.visible(who, auth::acl_operation::describe_configs,
                               auth::resource_type::topic, t.name.value)) {
            continue;
        }
        auto configs = co_await rc->admin().describe_topic_configs(t.name);
        if (!configs) {
            if (configs.error().reason() == api::errc::unknown_topic_or_partition) {
                continue;  // deleted since it was listed
            }
            co_return v3_backend_error(configs.error());
        }
        found.emplace_back(t.name.value, std::move(*configs));
    }
    const auto l = links_for(rc, ctx);
    const auto items = [&](json::writer& w) {
        for (const auto& [topic, configs] : found) {
            for (const auto& e : configs) {
                write_topic_config(w, l, topic, e);
            }
        }
    };
    co_return v3_ok(
        v3_list_body("KafkaTopicConfigList", l.of_cluster() + "/topics/-/configs", items));
}

boost::asio::awaitable<handler_result> v3_get_topic_config(rest_context* rc,
                                                           http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const std::string topic(*ctx.params.get("topic_name"));
    const std::string name(*ctx.params.get("name"));
    auto configs = co_await rc->admin().describe_topic_configs(topic_name(topic));
    if (!configs) {
        co_return v3_backend_error(configs.error());
    }
    for (const auto& e : *configs) {
        if (e.name == name) {
            json::writer w;
            write_topic_config(w, links_for(rc, ctx), topic, e);
            co_return v3_ok(w.str());
        }
    }
    co_return v3_error(code::not_found,
                       "Config " + name + " cannot be found for topic " + topic + ".");
}

/// Applies `changes` to the topic's configs: 204, or the backend's error.
boost::asio::awaitable<handler_result> alter_topic_configs(rest_context* rc,
                                                           http_request_context ctx,
                                                           std::vector<api::config_change> changes,
                                                           bool validate_only) {
    const std::string topic(*ctx.params.get("topic_name"));
    auto done = co_await rc->admin().alter_topic_configs(topic_name(topic), std::move(changes),
                                                         validate_only);
    if (!done) {
        co_return v3_backend_error(done.error());
    }
    co_return v3_no_content();
}

/// PUT .../configs/{name} {"value": "..."}.
boost::asio::awaitable<handler_result> v3_put_topic_config(rest_context* rc,
                                                           http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    std::vector<api::config_change> changes;
    if (auto bad = parse_config_put(ctx, changes)) {
        co_return std::move(*bad);
    }
    co_return co_await alter_topic_configs(rc, std::move(ctx), std::move(changes), false);
}

/// DELETE .../configs/{name}: back to the default.
boost::asio::awaitable<handler_result> v3_reset_topic_config(rest_context* rc,
                                                             http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    std::vector<api::config_change> changes{
        {std::string(*ctx.params.get("name")), api::config_change::op::remove, std::nullopt}};
    co_return co_await alter_topic_configs(rc, std::move(ctx), std::move(changes), false);
}

/// An AlterConfigBatchRequestData body ({"data":[{"name","value","operation":"SET"|"DELETE"}],
/// "validate_only"}) as changes; nullopt when it parsed, else the 400.
std::optional<http_response> parse_config_batch(const http_request& req,
                                                std::vector<api::config_change>& changes,
                                                bool& validate_only) {
    json::document doc;
    if (auto bad = parse_body(req, doc, v3_type)) {
        return bad;
    }
    const auto* data = doc.IsObject() ? json::member(doc, "data") : nullptr;
    if (data == nullptr || !data->IsArray()) {
        return v3_error(code::bad_request, "data must be an array of configs");
    }
    for (const auto& c : data->GetArray()) {
        const auto name = c.IsObject() ? json::get_string(c, "name") : std::nullopt;
        if (!name) {
            return v3_error(code::bad_request, "Each config needs a string name");
        }
        std::string op(json::get_string(c, "operation").value_or("SET"));
        std::transform(op.begin(), op.end(), op.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
        api::config_change change;
        change.name = std::string(*name);
        if (op == "DELETE") {
            change.operation = api::config_change::op::remove;
        } else if (op == "SET") {
            const auto value = json::get_string(c, "value");
            if (!value) {
                return v3_error(code::bad_request,
                                "Config " + change.name + " needs a string value to SET");
            }
            change.value = std::string(*value);
        } else {
            return v3_error(code::bad_request, "Unknown operation " + op +
                                                   " (SET or DELETE) for config " + change.name);
        }
        changes.push_back(std::move(change));
    }
    validate_only = json::get_bool(doc, "validate_only").value_or(false);
    return std::nullopt;
}

/// A PUT .../configs/{name} body ({"value": "..."}) as one SET; nullopt when it parsed.
std::optional<http_response> parse_config_put(const http_request_context& ctx,
                                              std::vector<api::config_change>& changes) {
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v3_type)) {
        return bad;
    }
    const auto value = doc.IsObject() ? json::get_string(doc, "value") : std::nullopt;
    if (!value) {
        return v3_error(code::bad_request, "value must be a string");
    }
    changes.push_back({std::string(*ctx.params.get("name")), api::config_change::op::set,
                       std::string(*value)});
    return std::nullopt;
}

/// POST .../configs:alter.
boost::asio::awaitable<handler_result> v3_batch_alter_topic_configs(rest_context* rc,
                                                                    http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    std::vector<api::config_change> changes;
    bool validate_only = false;
    if (auto bad = parse_config_batch(ctx.req, changes, validate_only)) {
        co_return std::move(*bad);
    }
    co_return co_await alter_topic_configs(rc, std::move(ctx), std::move(changes), validate_only);
}

// --- broker configs and the cluster-wide defaults ----------------------------------------------

/// A broker config change's backend error: a config that is not dynamic, a value refused, no
/// store for them are the client's (400 40002, with the backend's reason).
http_response broker_config_error(const api::backend_error& e) {
    const auto r = e.reason();
    if (r == api::errc::unsupported || r == api::errc::invalid_request ||
        r == api::errc::invalid_config) {
        return v3_error(code::kafka_bad_request, e.text());
    }
    return v3_backend_error(e);
}

/// The broker of the path (nullopt: not a number, answered 404 by the caller).
std::optional<std::int32_t> path_broker(const http_request_context& ctx) {
    return parse_partition(*ctx.params.get("broker_id"));
}

http_response unknown_broker(const http_request_context& ctx) {
    return v3_error(code::not_found,
                    "Broker " + std::string(*ctx.params.get("broker_id")) + " cannot be found.");
}

void write_broker_config(json::writer& w, const v3_links& l, std::int32_t broker,
                         const api::config_entry& e) {
    const std::string self = l.of_cluster() + "/brokers/" + std::to_string(broker);
    w.start_object();
    w.field("kind", "KafkaBrokerConfig");
    metadata(w, self + "/configs/" + url_segment(e.name),
             l.crn() + "/broker=" + std::to_string(broker) + "/config=" + e.name);
    w.field("cluster_id", l.cluster);
    w.field("broker_id", broker);
    write_config_fields(w, e);
    w.end_object();
}

void write_cluster_config(json::writer& w, const v3_links& l, const api::config_entry& e) {
    w.start_object();
    w.field("kind", "KafkaClusterConfig");
    metadata(w, l.of_cluster() + "/broker-configs/" + url_segment(e.name),
             l.crn() + "/broker-config=" + e.name);
    w.field("cluster_id", l.cluster);
    w.field("config_type", "BROKER");
    write_config_fields(w, e);
    w.end_object();
}

/// Applies `changes` to a broker's configs (`broker`) or the cluster-wide defaults (nullopt):
/// 204, or the error.
boost::asio::awaitable<handler_result> alter_broker_configs(rest_context* rc,
                                                            std::optional<std::int32_t> broker,
                                                            std::vector<api::config_change> changes,
                                                            bool validate_only) {
    if (broker) {
        // A broker the cluster has not is the path's 404.
        auto cluster = co_await rc->admin().describe_cluster();
        if (!cluster) {
            co_return v3_backend_error(cluster.error());
        }
        if (std::none_of(cluster->brokers.begin(), cluster->brokers.end(),
                         [&](const auto& b) { return b.node_id == *broker; })) {
            co_return v3_error(code::not_found,
                               "Broker " + std::to_string(*broker) + " cannot be found.");
        }
    }
    auto done = co_await rc->admin().alter_broker_configs(broker, std::move(changes),
                                                          validate_only);
    if (!done) {
        co_return broker_config_error(done.error());
    }
    co_return v3_no_content();
}

boost::asio::awaitable<handler_result> v3_get_broker_config(rest_context* rc,
                                                            http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const auto id = path_broker(ctx);
    if (!id) {
        co_return unknown_broker(ctx);
    }
    auto configs = co_await rc->admin().describe_broker_configs(*id);
    if (!configs) {
        if (configs.error().reason() == api::errc::invalid_request) {
            co_return unknown_broker(ctx);
        }
        co_return v3_backend_error(configs.error());
    }
    const std::string name(*ctx.params.get("name"));
    for (const auto& e : *configs) {
        if (e.name == name) {
            json::writer w;
            write_broker_config(w, links_for(rc, ctx), *id, e);
            co_return v3_ok(w.str());
        }
    }
    co_return v3_error(code::not_found, "Config " + name + " cannot be found for broker " +
                                            std::to_string(*id) + ".");
}

boost::asio::awaitable<handler_result> v3_put_broker_config(rest_context* rc,
                                                            http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const auto id = path_broker(ctx);
    if (!id) {
        co_return unknown_broker(ctx);
    }
    std::vector<api::config_change> changes;
    if (auto bad = parse_config_put(ctx, changes)) {
        co_return std::move(*bad);
    }
    co_return co_await alter_broker_configs(rc, id, std::move(changes), false);
}

boost::asio::awaitable<handler_result> v3_reset_broker_config(rest_context* rc,
                                                              http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const auto id = path_broker(ctx);
    if (!id) {
        co_return unknown_broker(ctx);
    }
    std::vector<api::config_change> changes{
        {std::string(*ctx.params.get("name")), api::config_change::op::remove, std::nullopt}};
    co_return co_await alter_broker_configs(rc, id, std::move(changes), false);
}

boost::asio::awaitable<handler_result> v3_batch_alter_broker_configs(rest_context* rc,
                                                                     http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const auto id = path_broker(ctx);
    if (!id) {
        co_return unknown_broker(ctx);
    }
    std::vector<api::config_change> changes;
    bool validate_only = false;
    if (auto bad = parse_config_batch(ctx.req, changes, validate_only)) {
        co_return std::move(*bad);
    }
    co_return co_await alter_broker_configs(rc, id, std::move(changes), validate_only);
}

/// GET .../brokers/-/configs: every broker's configs.
boost::asio::awaitable<handler_result> v3_list_all_broker_configs(rest_context* rc,
                                                                  http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto cluster = co_await rc->admin().describe_cluster();
    if (!cluster) {
        co_return v3_backend_error(cluster.error());
    }
    std::vector<std::pair<std::int32_t, std::vector<api::config_entry>>> all;
    for (const auto& b : cluster->brokers) {
        auto configs = co_await rc->admin().describe_broker_configs(b.node_id);
        if (!configs) {
            co_return v3_backend_error(configs.error());
        }
        all.emplace_back(b.node_id, std::move(*configs));
    }
    const auto l = links_for(rc, ctx);
    const auto items = [&](json::writer& w) {
        for (const auto& [id, configs] : all) {
            for (const auto& e : configs) {
                write_broker_config(w, l, id, e);
            }
        }
    };
    co_return v3_ok(
        v3_list_body("KafkaBrokerConfigList", l.of_cluster() + "/brokers/-/configs", items));
}

boost::asio::awaitable<handler_result> v3_list_cluster_configs(rest_context* rc,
                                                               http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto configs = co_await rc->admin().describe_cluster_configs();
    if (!configs) {
        co_return v3_backend_error(configs.error());
    }
    const auto l = links_for(rc, ctx);
    const auto items = [&](json::writer& w) {
        for (const auto& e : *configs) {
            write_cluster_config(w, l, e);
        }
    };
    co_return v3_ok(
        v3_list_body("KafkaClusterConfigList", l.of_cluster() + "/broker-configs", items));
}

boost::asio::awaitable<handler_result> v3_get_cluster_config(rest_context* rc,
                                                             http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto configs = co_await rc->admin().describe_cluster_configs();
    if (!configs) {
        co_return v3_backend_error(configs.error());
    }
    const std::string name(*ctx.params.get("name"));
    for (const auto& e : *configs) {
        if (e.name == name) {
            json::writer w;
            write_cluster_config(w, links_for(rc, ctx), e);
            co_return v3_ok(w.str());
        }
    }
    co_return v3_error(code::not_found, "Config " + name + " cannot be found.");
}

boost::asio::awaitable<handler_result> v3_put_cluster_config(rest_context* rc,
                                                             http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    std::vector<api::config_change> changes;
    if (auto bad = parse_config_put(ctx, changes)) {
        co_return std::move(*bad);
    }
    co_return co_await alter_broker_configs(rc, std::nullopt, std::move(changes), false);
}

boost::asio::awaitable<handler_result> v3_reset_cluster_config(rest_context* rc,
                                                               http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    std::vector<api::config_change> changes{
        {std::string(*ctx.params.get("name")), api::config_change::op::remove, std::nullopt}};
    co_return co_await alter_broker_configs(rc, std::nullopt, std::move(changes), false);
}

boost::asio::awaitable<handler_result> v3_batch_alter_cluster_configs(rest_context* rc,
                                                                      http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    std::vector<api::config_change> changes;
    bool validate_only = false;
    if (auto bad = parse_config_batch(ctx.req, changes, validate_only)) {
        co_return std::move(*bad);
    }
    co_return co_await alter_broker_configs(rc, std::nullopt, std::move(changes), validate_only);
}

}  // namespace

void add_v3_admin_routes(router& routes, rest_context& ctx) {
    auto bind = [rc = &ctx](auto fn) {
        return [rc, fn](http_request_context c) { return fn(rc, std::move(c)); };
    };
    const std::string cluster = "/v3/clusters/{cluster_id}";
    const std::string topic = cluster + "/topics/{topic_name}";
    routes.add(verb::get, cluster + "/brokers", bind(v3_list_brokers));
    routes.add(verb::get, cluster + "/brokers/{broker_id}", bind(v3_get_broker));
    routes.add(verb::get, cluster + "/brokers/{broker_id}/configs", bind(v3_list_broker_configs));
    routes.add(verb::get, cluster + "/brokers/-/configs", bind(v3_list_all_broker_configs));
    routes.add(verb::post, cluster + "/brokers/{broker_id}/configs:alter",
               bind(v3_batch_alter_broker_configs));
    routes.add(verb::get, cluster + "/brokers/{broker_id}/configs/{name}",
               bind(v3_get_broker_config));
    routes.add(verb::put, cluster + "/brokers/{broker_id}/configs/{name}",
               bind(v3_put_broker_config));
    routes.add(verb::delete_, cluster + "/brokers/{broker_id}/configs/{name}",
               bind(v3_reset_broker_config));
    routes.add(verb::get, cluster + "/broker-configs", bind(v3_list_cluster_configs));
    routes.add(verb::post, cluster + "/broker-configs:alter", bind(v3_batch_alter_cluster_configs));
    routes.add(verb::get, cluster + "/broker-configs/{name}", bind(v3_get_cluster_config));
    routes.add(verb::put, cluster + "/broker-configs/{name}", bind(v3_put_cluster_config));
    routes.add(verb::delete_, cluster + "/broker-configs/{name}", bind(v3_reset_cluster_config));
    routes.add(verb::post, cluster + "/topics", bind(v3_create_topic));
    routes.add(verb::delete_, topic, bind(v3_delete_topic));
    routes.add(verb::patch, topic, bind(v3_update_topic));
    routes.add(verb::get, topic + "/configs", bind(v3_list_topic_configs));
    routes.add(verb::get, topic + "/default-configs", bind(v3_list_default_topic_configs));
    routes.add(verb::get, cluster + "/topics/-/configs", bind(v3_list_all_topic_configs));
    routes.add(verb::post, topic + "/configs:alter", bind(v3_batch_alter_topic_configs));
    routes.add(verb::get, topic + "/configs/{name}", bind(v3_get_topic_config));
    routes.add(verb::put, topic + "/configs/{name}", bind(v3_put_topic_config));
    routes.add(verb::delete_, topic + "/configs/{name}", bind(v3_reset_topic_config));
    add_v3_group_routes(routes, ctx);
    add_v3_acl_routes(routes, ctx);
}

}  // namespace sluice::gateway::rest
