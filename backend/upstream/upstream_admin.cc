#include "backend/upstream/upstream_admin.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backend/upstream/upstream_admin_request.h"
#include "backend/upstream/upstream_common.h"

namespace sluice::backend::upstream {
namespace {

using std::chrono::milliseconds;

/// A request for the controller (CreateTopics, DeleteTopics, CreatePartitions) when the
/// cluster's metadata names as its controller a node that is none of its brokers (librdkafka
/// 2.12's mock cluster says 0 of brokers 1..3): librdkafka would wait the whole deadline for
/// it. That fails at once instead; no controller at all (-1, an election) still waits.
api::backend_result<void> admin_controller_known(rd_kafka_t* rk, milliseconds timeout) {
    auto f = fetch_metadata(rk, metadata_scope::known, {}, timeout);
    if (f.err || !f.md) {
        return {};  // the request itself says what is wrong
    }
    const std::int32_t controller = rd_kafka_controllerid(rk, 0);
    if (controller < 0) {
        return {};
    }
    std::string brokers;
    for (int i = 0; i < f.md->broker_cnt; ++i) {
        if (f.md->brokers[i].id == controller) {
            return {};
        }
        brokers += fmt::format("{}{}", brokers.empty() ? "" : ", ", f.md->brokers[i].id);
    }
    return api::backend_failure(
        api::make_error_code(api::errc::backend_unavailable),
        fmt::format("the cluster names node {} as its controller, which is none of its brokers "
                    "({})",
                    controller, brokers));
}

api::topic_info topic_of(const rd_kafka_metadata_topic_t& t) {
    api::topic_info out;
    out.name = topic_name(t.topic);
    out.internal = out.name.value.starts_with("__");
    for (int p = 0; p < t.partition_cnt; ++p) {
        const auto& mp = t.partitions[p];
        api::partition_info pi;
        pi.partition = partition_id(mp.id);
        pi.leader = mp.leader;
        pi.replicas.assign(mp.replicas, mp.replicas + mp.replica_cnt);
        pi.isr.assign(mp.isrs, mp.isrs + mp.isr_cnt);
        out.partitions.push_back(std::move(pi));
    }
    std::sort(out.partitions.begin(), out.partitions.end(),
              [](const auto& a, const auto& b) { return a.partition < b.partition; });
    return out;
}

api::backend_error unknown_topic(const std::string& name) {
    return api::backend_error(api::make_error_code(api::errc::unknown_topic_or_partition),
                              fmt::format("topic '{}' does not exist", name));
}

/// Blocking: one topic's description from the cluster's metadata.
api::backend_result<api::topic_info> describe_one(rd_kafka_t* rk, const std::string& name,
                                                  milliseconds timeout) {
    auto f = fetch_metadata(rk, metadata_scope::one, name, timeout);
    if (f.err) {
        return api::backend_failure(to_backend_error(f.err));
    }
    for (int i = 0; i < f.md->topic_cnt; ++i) {
        const auto& t = f.md->topics[i];
        if (name != t.topic) {
            continue;
        }
        if (t.err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
            return api::backend_failure(unknown_topic(name));
        }
        if (t.err) {
            return api::backend_failure(to_backend_error(t.err));
        }
        return topic_of(t);
    }
    return api::backend_failure(unknown_topic(name));
}

api::config_source source_of(rd_kafka_ConfigSource_t s) {
    switch (s) {
        case RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG:
            return api::config_source::dynamic_topic;
        case RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG:
            return api::config_source::dynamic_broker;
        case RD_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG:
            return api::config_source::dynamic_default_broker;
        case RD_KAFKA_CONFIG_SOURCE_STATIC_BROKER_CONFIG:
            return api::config_source::static_broker;
        case RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG:
            return api::config_source::default_config;
        case RD_KAFKA_CONFIG_SOURCE_UNKNOWN_CONFIG:
        case RD_KAFKA_CONFIG_SOURCE__CNT:
            break;
    }
    return api::config_source::unknown;
}

/// Blocking: DescribeConfigs of one resource.
api::backend_result<std::vector<api::config_entry>> describe_configs(rd_kafka_t* rk,
                                                                     rd_kafka_ResourceType_t type,
                                                                     const std::string& name,
                                                                     milliseconds timeout) {
    rd_kafka_ConfigResource_t* res = rd_kafka_ConfigResource_new(type, name.c_str());
    auto ev = admin_detail::admin_request(
        rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout, false,
        [&](auto* options, auto* queue) { rd_kafka_DescribeConfigs(rk, &res, 1, options, queue); });
    rd_kafka_ConfigResource_destroy(res);
    if (!ev) {
        return api::backend_failure(admin_detail::timed_out("DescribeConfigs", timeout));
    }
    if (auto e = admin_detail::event_error(ev.get())) {
        return api::backend_failure(std::move(e));
    }
    size_t n = 0;
    const auto* result = rd_kafka_event_DescribeConfigs_result(ev.get());
    const rd_kafka_ConfigResource_t** resources =
        result ? rd_kafka_DescribeConfigs_result_resources(result, &n) : nullptr;
    if (n == 0) {
        return api::backend_failure(api::make_error_code(api::errc::unknown),
                                    "DescribeConfigs answered no resource");
    }
    if (auto err = rd_kafka_ConfigResource_error(resources[0])) {
        if (type == RD_KAFKA_RESOURCE_TOPIC && err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
            return api::backend_failure(unknown_topic(name));
        }
        return api::backend_failure(
            to_backend_error(err, rd_kafka_ConfigResource_error_string(resources[0])));
    }
    size_t cnt = 0;
    const rd_kafka_ConfigEntry_t** entries = rd_kafka_ConfigResource_configs(resources[0], &cnt);
    std::vector<api::config_entry> out;
    out.reserve(cnt);
    for (size_t i = 0; i < cnt; ++i) {
        const auto* e = entries[i];
        api::config_entry c;
        c.name = rd_kafka_ConfigEntry_name(e);
        c.value = admin_detail::optional_string(rd_kafka_ConfigEntry_value(e));
        c.source = source_of(rd_kafka_ConfigEntry_source(e));
        c.read_only = rd_kafka_ConfigEntry_is_read_only(e) != 0;
        size_t syn_cnt = 0;
        const rd_kafka_ConfigEntry_t** syns = rd_kafka_ConfigEntry_synonyms(e, &syn_cnt);
        for (size_t s = 0; s < syn_cnt; ++s) {
            c.synonyms.push_back(api::config_synonym{
                rd_kafka_ConfigEntry_name(syns[s]),
                admin_detail::optional_string(rd_kafka_ConfigEntry_value(syns[s])),
                source_of(rd_kafka_ConfigEntry_source(syns[s]))});
        }
        out.push_back(std::move(c));
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
}

/// A comma-separated list config's items.
std::vector<std::string> list_items(const std::string& v) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= v.size() && !v.empty()) {
        auto comma = v.find(',', start);
        auto item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!item.empty()) {
            out.push_back(item);
        }
        if (comma == std::string::npos) {
            break;
        }
        start = comma + 1;
    }
    return out;
}

std::string join_items(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) {
        if (!out.empty()) {
            out += ',';
        }
        out += i;
    }
    return out;
}

/// Where a group's partition stands (committed, high watermark, lag).

/// IncrementalAlterConfigs over AlterConfigs (librdkafka 2.0.2 has no IncrementalAlterConfigs):
/// read the resource's own configs (those of source `own`), apply the changes, write the whole
/// set back. Not atomic: a concurrent writer between the read and the write loses.
api::backend_result<void> alter_configs_incrementally(rd_kafka_t* rk, rd_kafka_ResourceType_t type,
                                                      const std::string& n,
                                                      api::config_source own,
                                                      const std::vector<api::config_change>& changes,
                                                      bool validate_only, milliseconds timeout) {
    auto current = describe_configs(rk, type, n, timeout);
    if (!current) {
        return api::backend_failure(current.error());
    }
    std::map<std::string, std::string> overrides;
    std::map<std::string, std::optional<std::string>> effective;
    for (const auto& c : *current) {
        effective[c.name] = c.value;
        if (c.source == own && c.value) {
            overrides[c.name] = *c.value;
        }
    }
    for (const auto& ch : changes) {
        using op = api::config_change::op;
        const auto base =
            overrides.contains(ch.name)
                ? std::optional<std::string>(overrides[ch.name])
                : (effective.contains(ch.name) ? effective[ch.name] : std::nullopt);
        switch (ch.operation) {
            case op::set:
                overrides[ch.name] = ch.value.value_or("");
                break;
            case op::remove:
                overrides.erase(ch.name);
                break;
            case op::append: {
                auto items = list_items(base.value_or(""));
                for (auto& v : list_items(ch.value.value_or(""))) {
                    if (std::find(items.begin(), items.end(), v) == items.end()) {
                        items.push_back(v);
                    }
                }
                overrides[ch.name] = join_items(items);
                break;
            }
            case op::subtract: {
                auto items = list_items(base.value_or(""));
                for (auto& v : list_items(ch.value.value_or(""))) {
                    items.erase(std::remove(items.begin(), items.end(), v), items.end());
                }
                overrides[ch.name] = join_items(items);
                break;
            }
        }
    }
    rd_kafka_ConfigResource_t* res =
        rd_kafka_ConfigResource_new(type, n.c_str());
    for (const auto& [k, v] : overrides) {
        rd_kafka_ConfigResource_set_config(res, k.c_str(), v.c_str());
    }
    auto ev =
        admin_detail::admin_request(rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS, timeout, validate_only,
                                    [&](auto* options, auto* queue) {
                                        rd_kafka_AlterConfigs(rk, &res, 1, options, queue);
                                    });
    rd_kafka_ConfigResource_destroy(res);
    if (!ev) {
        return api::backend_failure(admin_detail::timed_out("AlterConfigs", timeout));
    }
    if (auto e = admin_detail::event_error(ev.get())) {
        return api::backend_failure(std::move(e));
    }
    size_t cnt = 0;
    const auto* result = rd_kafka_event_AlterConfigs_result(ev.get());
    const rd_kafka_ConfigResource_t** resources =
        result ? rd_kafka_AlterConfigs_result_resources(result, &cnt) : nullptr;
    if (cnt > 0) {
        if (auto err = rd_kafka_ConfigResource_error(resources[0])) {
            return api::backend_failure(
                to_backend_error(err, rd_kafka_ConfigResource_error_string(resources[0])));
        }
    }
    return {};
}

}  // namespace

upstream_admin::upstream_admin(rd_kafka_t* rk, blocking_pool& pool,
                               upstream_monitor& monitor, upstream_producer& producer,
                               milliseconds request_timeout,
                               std::shared_ptr<api::log_dirs_reader> log_dirs)
    : rk_(rk),
      pool_(pool),
      monitor_(monitor),
      producer_(producer),
      timeout_(request_timeout),
      log_dirs_(std::move(log_dirs)) {}

// --- topology --------------------------------------------------------------------------------

api::awaitable<api::backend_result<api::cluster_info>> upstream_admin::describe_cluster() {
    auto blocking_job = [rk = rk_, timeout = timeout_]() -> api::backend_result<api::cluster_info> {
        auto f = fetch_metadata(rk, metadata_scope::known, {}, timeout);
        if (f.err) {
            return api::backend_failure(to_backend_error(f.err));
        }
        api::cluster_info out;
        const int ms = static_cast<int>(timeout.count());
        if (char* id = rd_kafka_clusterid(rk, ms)) {
            out.cluster_id = id;
            rd_kafka_mem_free(rk, id);
        }
        out.controller_id = rd_kafka_controllerid(rk, ms);
        for (int i = 0; i < f.md->broker_cnt; ++i) {
            const auto& b = f.md->brokers[i];
            out.brokers.push_back(api::broker_info{b.id, b.host, b.port, std::nullopt});
        }
        std::sort(out.brokers.begin(), out.brokers.end(),
                  [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
        return out;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<std::vector<api::topic_info>>> upstream_admin::list_topics() {
    auto blocking_job =
        [rk = rk_, timeout = timeout_]() -> api::backend_result<std::vector<api::topic_info>> {
        auto f = fetch_metadata(rk, metadata_scope::all, {}, timeout);
        if (f.err) {
            return api::backend_failure(to_backend_error(f.err));
        }
        std::vector<api::topic_info> out;
        for (int i = 0; i < f.md->topic_cnt; ++i) {
            if (!f.md->topics[i].err) {
                out.push_back(topic_of(f.md->topics[i]));
            }
        }
        std::sort(out.begin(), out.end(),
                  [](const auto& a, const auto& b) { return a.name < b.name; });
        return out;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

// --- storage ---------------------------------------------------------------------------------

api::awaitable<api::backend_result<api::log_sizes>> upstream_admin::describe_log_dirs() {
    if (log_dirs_ == nullptr) {
        co_return api::backend_failure(api::make_error_code(api::errc::unsupported),
                                       "no way to ask the brokers for DescribeLogDirs");
    }
    auto cluster = co_await describe_cluster();
    if (!cluster) {
        co_return std::unexpected(std::move(cluster.error()));
    }
    auto brokers = std::move(cluster->brokers);
    co_return co_await log_dirs_->read(std::move(brokers));
}

api::awaitable<api::backend_result<api::topic_info>> upstream_admin::describe_topic(
    topic_name name) {
    auto blocking_job = [rk = rk_, timeout = timeout_, n = name.value] {
        return describe_one(rk, n, timeout);
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

// --- topics and configs -----------------------------------------------------------------------

api::awaitable<api::backend_result<api::topic_info>> upstream_admin::create_topic(
    api::new_topic spec) {
    auto blocking_job = [rk = rk_, timeout = timeout_,
                         spec]() -> api::backend_result<api::topic_info> {
        char err[512];
        // Replication factor -1: the cluster's default.replication.factor (KIP-464).
        rd_kafka_NewTopic_t* nt =
            rd_kafka_NewTopic_new(spec.name.value.c_str(), spec.partitions, -1, err, sizeof err);
        if (!nt) {
            return api::backend_failure(
                api::make_error_code(spec.partitions < 1 ? api::errc::invalid_partitions
                                                         : api::errc::invalid_request),
                err);
        }
        for (const auto& [k, v] : spec.configs) {
            rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
        }
        if (auto known = admin_controller_known(rk, timeout); !known) {
            rd_kafka_NewTopic_destroy(nt);
            return api::backend_failure(std::move(known.error()));
        }
        auto ev = admin_detail::admin_request(
            rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout, spec.validate_only,
            [&](auto* options, auto* queue) { rd_kafka_CreateTopics(rk, &nt, 1, options, queue); });
        rd_kafka_NewTopic_destroy(nt);
        if (auto e = admin_detail::topic_result_error(ev, "CreateTopics", timeout,
                                                      rd_kafka_event_CreateTopics_result,
                                                      rd_kafka_CreateTopics_result_topics)) {
            return api::backend_failure(std::move(e));
        }
        if (spec.validate_only) {
            api::topic_info t;
            t.name = spec.name;
            t.internal = spec.name.value.starts_with("__");
            for (std::int32_t p = 0; p < spec.partitions; ++p) {
                t.partitions.push_back(api::partition_info{partition_id(p), -1, {}, {}});
            }
            return t;
        }
        // The controller answered; the broker we ask for metadata may learn of the topic a
        // little later (bounded: a few tries within the deadline).
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (int attempt = 0;; ++attempt) {
            auto d = describe_one(rk, spec.name.value, timeout);
            if (d || d.error().reason() != api::errc::unknown_topic_or_partition ||
                std::chrono::steady_clock::now() + milliseconds(50) >= deadline || attempt > 40) {
                return d;
            }
            std::this_thread::sleep_for(milliseconds(50));
        }
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    producer_.forget(spec.name.value);
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<void>> upstream_admin::delete_topic(topic_name name) {
    auto blocking_job = [rk = rk_, timeout = timeout_,
                         n = name.value]() -> api::backend_result<void> {
        if (auto known = admin_controller_known(rk, timeout); !known) {
            return api::backend_failure(std::move(known.error()));
        }
        rd_kafka_DeleteTopic_t* dt = rd_kafka_DeleteTopic_new(n.c_str());
        auto ev = admin_detail::admin_request(
            rk, RD_KAFKA_ADMIN_OP_DELETETOPICS, timeout, false,
            [&](auto* options, auto* queue) { rd_kafka_DeleteTopics(rk, &dt, 1, options, queue); });
        rd_kafka_DeleteTopic_destroy(dt);
        if (auto e = admin_detail::topic_result_error(ev, "DeleteTopics", timeout,
                                                      rd_kafka_event_DeleteTopics_result,
                                                      rd_kafka_DeleteTopics_result_topics,
                                                      unknown_topic(n))) {
            return api::backend_failure(std::move(e));
        }
        return {};
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    producer_.forget(name.value);
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<void>> upstream_admin::create_partitions(topic_name name,
                                                                            std::int32_t total) {
    auto blocking_job = [rk = rk_, timeout = timeout_, n = name.value,
                         total]() -> api::backend_result<void> {
        if (total < 1) {
            return api::backend_failure(api::make_error_code(api::errc::invalid_partitions),
                                        fmt::format("{} partitions: at least 1", total));
        }
        char err[512];
        if (auto known = admin_controller_known(rk, timeout); !known) {
            return api::backend_failure(std::move(known.error()));
        }
        rd_kafka_NewPartitions_t* np =
            rd_kafka_NewPartitions_new(n.c_str(), static_cast<size_t>(total), err, sizeof err);
        if (!np) {
            return api::backend_failure(api::make_error_code(api::errc::invalid_partitions), err);
        }
        auto ev =
            admin_detail::admin_request(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS, timeout, false,
                                        [&](auto* options, auto* queue) {
                                            rd_kafka_CreatePartitions(rk, &np, 1, options, queue);
                                        });
        rd_kafka_NewPartitions_destroy(np);
        if (auto e = admin_detail::topic_result_error(ev, "CreatePartitions", timeout,
                                                      rd_kafka_event_CreatePartitions_result,
                                                      rd_kafka_CreatePartitions_result_topics,
                                                      unknown_topic(n))) {
            return api::backend_failure(std::move(e));
        }
        return {};
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    producer_.forget(name.value);
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<std::vector<api::config_entry>>>
upstream_admin::describe_topic_configs(topic_name name) {
    auto blocking_job = [rk = rk_, timeout = timeout_, n = name.value] {
        return describe_configs(rk, RD_KAFKA_RESOURCE_TOPIC, n, timeout);
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<void>> upstream_admin::alter_topic_configs(
    topic_name name, std::vector<api::config_change> changes, bool validate_only) {
    auto blocking_job = [rk = rk_, timeout = timeout_, n = name.value, changes = std::move(changes),
                         validate_only]() -> api::backend_result<void> {
        return alter_configs_incrementally(rk, RD_KAFKA_RESOURCE_TOPIC, n,
                                           api::config_source::dynamic_topic, changes,
                                           validate_only, timeout);
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<std::vector<api::config_entry>>>
upstream_admin::describe_broker_configs(std::int32_t node_id) {
    auto blocking_job = [rk = rk_, timeout = timeout_,
                         node_id]() -> api::backend_result<std::vector<api::config_entry>> {
        // librdkafka holds a DescribeConfigs for a broker it does not know until the request
        // times out: a broker id the metadata does not name is refused at once (as the native
        // admin refuses it).
        auto f = fetch_metadata(rk, metadata_scope::known, {}, timeout);
        if (f.err) {
            return api::backend_failure(to_backend_error(f.err));
        }
        const bool known = std::any_of(f.md->brokers, f.md->brokers + f.md->broker_cnt,
                                       [&](const auto& b) { return b.id == node_id; });
        if (!known) {
            return api::backend_failure(api::make_error_code(api::errc::invalid_request),
                                        fmt::format("broker {} is not in the cluster", node_id));
        }
        return describe_configs(rk, RD_KAFKA_RESOURCE_BROKER, std::to_string(node_id), timeout);
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}


api::awaitable<api::backend_result<std::vector<api::config_entry>>>
upstream_admin::describe_cluster_configs() {
    auto blocking_job = [rk = rk_,
                         timeout = timeout_]() -> api::backend_result<std::vector<api::config_entry>> {
        // librdkafka 2.0.2 crashes on a BROKER resource that is not a broker id (the cluster's
        // "" resource): one broker's configs carry the cluster-wide defaults as synonyms.
        auto f = fetch_metadata(rk, metadata_scope::known, {}, timeout);
        if (f.err) {
            return api::backend_failure(to_backend_error(f.err));
        }
        if (f.md->broker_cnt == 0) {
            return api::backend_failure(api::make_error_code(api::errc::backend_unavailable),
                                        "the cluster named no broker");
        }
        auto configs = describe_configs(rk, RD_KAFKA_RESOURCE_BROKER,
                                        std::to_string(f.md->brokers[0].id), timeout);
        if (!configs) {
            return configs;
        }
        std::vector<api::config_entry> out;
        for (auto& e : *configs) {
            const auto at = std::find_if(e.synonyms.begin(), e.synonyms.end(), [](const auto& s) {
                return s.source == api::config_source::dynamic_default_broker;
            });
            if (at == e.synonyms.end()) {
                continue;
            }
            api::config_entry c;
            c.name = e.name;
            c.value = at->value;
            c.source = at->source;
            c.read_only = e.read_only;
            c.type = e.type;
            c.documentation = std::move(e.documentation);
            c.synonyms.assign(at, e.synonyms.end());
            out.push_back(std::move(c));
        }
        return out;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<void>> upstream_admin::alter_broker_configs(
    std::optional<std::int32_t> node_id, std::vector<api::config_change> changes,
    bool validate_only) {
    if (!node_id) {
        // librdkafka 2.0.2 crashes on a BROKER resource that is not a broker id (the cluster's
        // ""), and has no other way to it.
        co_return counted(api::backend_result<void>(api::backend_failure(
            api::make_error_code(api::errc::unsupported),
            "the cluster-wide broker configs cannot be changed through the upstream client "
            "(librdkafka 2.0.2 cannot address them): change them on the cluster")));
    }
    auto blocking_job = [rk = rk_, timeout = timeout_, node_id, changes = std::move(changes),
                         validate_only]() -> api::backend_result<void> {
        if (node_id) {
            auto f = fetch_metadata(rk, metadata_scope::known, {}, timeout);
            if (f.err) {
                return api::backend_failure(to_backend_error(f.err));
            }
            const bool known = std::any_of(f.md->brokers, f.md->brokers + f.md->broker_cnt,
                                           [&](const auto& b) { return b.id == *node_id; });
            if (!known) {
                return api::backend_failure(
                    api::make_error_code(api::errc::invalid_request),
                    fmt::format("broker {} is not in the cluster", *node_id));
            }
        }
        return alter_configs_incrementally(
            rk, RD_KAFKA_RESOURCE_BROKER, node_id ? std::to_string(*node_id) : std::string(),
            node_id ? api::config_source::dynamic_broker : api::config_source::dynamic_default_broker,
            changes, validate_only, timeout);
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

}  // namespace sluice::backend::upstream
