#include "backend/upstream/upstream_admin.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backend/upstream/upstream_common.h"

namespace sluice::backend::upstream {
namespace {

using std::chrono::milliseconds;

struct admin_options_deleter {
    void operator()(rd_kafka_AdminOptions_t* o) const noexcept { rd_kafka_AdminOptions_destroy(o); }
};
using admin_options_ptr = std::unique_ptr<rd_kafka_AdminOptions_t, admin_options_deleter>;

/// Blocking: one admin request. `start(options, queue)` issues it; the answer is its result
/// event, or null when none came within the timeout (then: request_timed_out).
template <typename Start>
rk_event_ptr admin_request(rd_kafka_t* rk, rd_kafka_admin_op_t op, milliseconds timeout,
                           bool validate_only, Start start) {
    rk_queue_ptr queue(rd_kafka_queue_new(rk));
    admin_options_ptr options(rd_kafka_AdminOptions_new(rk, op));
    char err[256];
    const int ms = static_cast<int>(std::max<std::int64_t>(timeout.count(), 1));
    rd_kafka_AdminOptions_set_request_timeout(options.get(), ms, err, sizeof err);
    if (op == RD_KAFKA_ADMIN_OP_CREATETOPICS || op == RD_KAFKA_ADMIN_OP_DELETETOPICS ||
        op == RD_KAFKA_ADMIN_OP_CREATEPARTITIONS || op == RD_KAFKA_ADMIN_OP_DELETERECORDS) {
        // Wait for the controller to finish, so that what follows sees the change.
        rd_kafka_AdminOptions_set_operation_timeout(options.get(), ms, err, sizeof err);
    }
    if (validate_only) {
        rd_kafka_AdminOptions_set_validate_only(options.get(), 1, err, sizeof err);
    }
    start(options.get(), queue.get());
    // A little longer than the request's own timeout, so that its timeout error wins.
    return rk_event_ptr(rd_kafka_queue_poll(queue.get(), ms + 1000));
}

api::backend_error timed_out(const char* what, milliseconds timeout) {
    return api::backend_error(api::make_error_code(api::errc::request_timed_out),
                              fmt::format("{}: no answer within {} ms", what, timeout.count()));
}

/// The request-level error of an admin result event (empty when it succeeded).
api::backend_error event_error(rd_kafka_event_t* ev) {
    return to_backend_error(rd_kafka_event_error(ev), rd_kafka_event_error_string(ev));
}

api::backend_error error_of(const rd_kafka_error_t* e) {
    if (!e) {
        return {};
    }
    return to_backend_error(rd_kafka_error_code(e), rd_kafka_error_string(e));
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

std::optional<std::string> optional_string(const char* s) {
    return s ? std::optional<std::string>(s) : std::nullopt;
}

/// Blocking: DescribeConfigs of one resource.
api::backend_result<std::vector<api::config_entry>> describe_configs(
    rd_kafka_t* rk, rd_kafka_ResourceType_t type, const std::string& name,
    milliseconds timeout) {
    rd_kafka_ConfigResource_t* res = rd_kafka_ConfigResource_new(type, name.c_str());
    auto ev = admin_request(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout, false,
                            [&](auto* options, auto* queue) {
                                rd_kafka_DescribeConfigs(rk, &res, 1, options, queue);
                            });
    rd_kafka_ConfigResource_destroy(res);
    if (!ev) {
        return api::backend_failure(timed_out("DescribeConfigs", timeout));
    }
    if (auto e = event_error(ev.get())) {
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
        c.value = optional_string(rd_kafka_ConfigEntry_value(e));
        c.source = source_of(rd_kafka_ConfigEntry_source(e));
        c.read_only = rd_kafka_ConfigEntry_is_read_only(e) != 0;
        size_t syn_cnt = 0;
        const rd_kafka_ConfigEntry_t** syns = rd_kafka_ConfigEntry_synonyms(e, &syn_cnt);
        for (size_t s = 0; s < syn_cnt; ++s) {
            c.synonyms.push_back(api::config_synonym{
                rd_kafka_ConfigEntry_name(syns[s]),
                optional_string(rd_kafka_ConfigEntry_value(syns[s])),
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
api::group_view::partition lag_of(const rd_kafka_topic_partition_t& committed,
                                  std::int64_t high_watermark) {
    api::group_view::partition p;
    p.topic = topic_name(committed.topic);
    p.partition = partition_id(committed.partition);
    p.committed = offset(committed.offset >= 0 ? committed.offset : -1);
    p.log_end = offset(high_watermark);
    if (p.committed.value >= 0 && high_watermark >= 0) {
        p.lag = std::max<std::int64_t>(0, high_watermark - p.committed.value);
    }
    if (committed.metadata && committed.metadata_size > 0) {
        p.metadata = std::string(static_cast<const char*>(committed.metadata),
                                 committed.metadata_size);
    }
    return p;
}

/// Blocking: ListConsumerGroupOffsets of `group` (every committed partition when `parts` is
/// null).
api::backend_result<rk_partitions_ptr> fetch_committed(rd_kafka_t* rk, const std::string& group,
                                                       const rd_kafka_topic_partition_list_t* parts,
                                                       milliseconds timeout) {
    rd_kafka_ListConsumerGroupOffsets_t* req =
        rd_kafka_ListConsumerGroupOffsets_new(group.c_str(), parts);
    auto ev = admin_request(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS, timeout, false,
                            [&](auto* options, auto* queue) {
                                rd_kafka_ListConsumerGroupOffsets(rk, &req, 1, options, queue);
                            });
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    if (!ev) {
        return api::backend_failure(timed_out("ListConsumerGroupOffsets", timeout));
    }
    if (auto e = event_error(ev.get())) {
        return api::backend_failure(std::move(e));
    }
    size_t n = 0;
    const auto* result = rd_kafka_event_ListConsumerGroupOffsets_result(ev.get());
    const rd_kafka_group_result_t** groups =
        result ? rd_kafka_ListConsumerGroupOffsets_result_groups(result, &n) : nullptr;
    if (n == 0) {
        return rk_partitions_ptr(rd_kafka_topic_partition_list_new(0));
    }
    if (auto e = error_of(rd_kafka_group_result_error(groups[0]))) {
        return api::backend_failure(std::move(e));
    }
    const auto* list = rd_kafka_group_result_partitions(groups[0]);
    return rk_partitions_ptr(list ? rd_kafka_topic_partition_list_copy(list)
                                  : rd_kafka_topic_partition_list_new(0));
}

}  // namespace

upstream_admin::upstream_admin(rd_kafka_t* rk, boost::asio::thread_pool& pool,
                               upstream_monitor& monitor, upstream_producer& producer,
                               milliseconds request_timeout)
    : rk_(rk), pool_(pool), monitor_(monitor), producer_(producer), timeout_(request_timeout) {}

// --- topology --------------------------------------------------------------------------------

api::awaitable<api::backend_result<api::cluster_info>> upstream_admin::describe_cluster() {
    auto blocking_job = [rk = rk_, timeout = timeout_]()
                                              -> api::backend_result<api::cluster_info> {
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
    auto blocking_job = [rk = rk_, timeout = timeout_]()
                                              -> api::backend_result<std::vector<api::topic_info>> {
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
    auto blocking_job = [rk = rk_, timeout = timeout_, spec]()
                                              -> api::backend_result<api::topic_info> {
        char err[512];
        // Replication factor -1: the cluster's default.replication.factor (KIP-464).
        rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(spec.name.value.c_str(), spec.partitions,
                                                        -1, err, sizeof err);
        if (!nt) {
            return api::backend_failure(
                api::make_error_code(spec.partitions < 1 ? api::errc::invalid_partitions
                                                         : api::errc::invalid_request),
                err);
        }
        for (const auto& [k, v] : spec.configs) {
            rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
        }
        auto ev = admin_request(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout, spec.validate_only,
                                [&](auto* options, auto* queue) {
                                    rd_kafka_CreateTopics(rk, &nt, 1, options, queue);
                                });
        rd_kafka_NewTopic_destroy(nt);
        if (!ev) {
            return api::backend_failure(timed_out("CreateTopics", timeout));
        }
        if (auto e = event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        size_t n = 0;
        const auto* result = rd_kafka_event_CreateTopics_result(ev.get());
        const rd_kafka_topic_result_t** topics =
            result ? rd_kafka_CreateTopics_result_topics(result, &n) : nullptr;
        if (n > 0 && rd_kafka_topic_result_error(topics[0])) {
            return api::backend_failure(to_backend_error(
                rd_kafka_topic_result_error(topics[0]),
                rd_kafka_topic_result_error_string(topics[0])));
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
        rd_kafka_DeleteTopic_t* dt = rd_kafka_DeleteTopic_new(n.c_str());
        auto ev = admin_request(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS, timeout, false,
                                [&](auto* options, auto* queue) {
                                    rd_kafka_DeleteTopics(rk, &dt, 1, options, queue);
                                });
        rd_kafka_DeleteTopic_destroy(dt);
        if (!ev) {
            return api::backend_failure(timed_out("DeleteTopics", timeout));
        }
        if (auto e = event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        size_t cnt = 0;
        const auto* result = rd_kafka_event_DeleteTopics_result(ev.get());
        const rd_kafka_topic_result_t** topics =
            result ? rd_kafka_DeleteTopics_result_topics(result, &cnt) : nullptr;
        if (cnt > 0) {
            if (auto err = rd_kafka_topic_result_error(topics[0])) {
                if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
                    return api::backend_failure(unknown_topic(n));
                }
                return api::backend_failure(
                    to_backend_error(err, rd_kafka_topic_result_error_string(topics[0])));
            }
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
        rd_kafka_NewPartitions_t* np =
            rd_kafka_NewPartitions_new(n.c_str(), static_cast<size_t>(total), err, sizeof err);
        if (!np) {
            return api::backend_failure(api::make_error_code(api::errc::invalid_partitions), err);
        }
        auto ev = admin_request(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS, timeout, false,
                                [&](auto* options, auto* queue) {
                                    rd_kafka_CreatePartitions(rk, &np, 1, options, queue);
                                });
        rd_kafka_NewPartitions_destroy(np);
        if (!ev) {
            return api::backend_failure(timed_out("CreatePartitions", timeout));
        }
        if (auto e = event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        size_t cnt = 0;
        const auto* result = rd_kafka_event_CreatePartitions_result(ev.get());
        const rd_kafka_topic_result_t** topics =
            result ? rd_kafka_CreatePartitions_result_topics(result, &cnt) : nullptr;
        if (cnt > 0) {
            if (auto err = rd_kafka_topic_result_error(topics[0])) {
                if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
                    return api::backend_failure(unknown_topic(n));
                }
                return api::backend_failure(
                    to_backend_error(err, rd_kafka_topic_result_error_string(topics[0])));
            }
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
    // librdkafka 2.0.2 has AlterConfigs (which replaces a topic's whole set of overrides) but
    // not IncrementalAlterConfigs: read the topic's own overrides, apply the changes, write the
    // whole set back. Not atomic: a concurrent writer between the read and the write loses.
    auto blocking_job = [rk = rk_, timeout = timeout_, n = name.value,
                                           changes = std::move(changes),
                                           validate_only]() -> api::backend_result<void> {
        auto current = describe_configs(rk, RD_KAFKA_RESOURCE_TOPIC, n, timeout);
        if (!current) {
            return api::backend_failure(current.error());
        }
        std::map<std::string, std::string> overrides;
        std::map<std::string, std::optional<std::string>> effective;
        for (const auto& c : *current) {
            effective[c.name] = c.value;
            if (c.source == api::config_source::dynamic_topic && c.value) {
                overrides[c.name] = *c.value;
            }
        }
        for (const auto& ch : changes) {
            using op = api::config_change::op;
            const auto base = overrides.contains(ch.name)
                                  ? std::optional<std::string>(overrides[ch.name])
                                  : (effective.contains(ch.name) ? effective[ch.name]
                                                                 : std::nullopt);
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
            rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, n.c_str());
        for (const auto& [k, v] : overrides) {
            rd_kafka_ConfigResource_set_config(res, k.c_str(), v.c_str());
        }
        auto ev = admin_request(rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS, timeout, validate_only,
                                [&](auto* options, auto* queue) {
                                    rd_kafka_AlterConfigs(rk, &res, 1, options, queue);
                                });
        rd_kafka_ConfigResource_destroy(res);
        if (!ev) {
            return api::backend_failure(timed_out("AlterConfigs", timeout));
        }
        if (auto e = event_error(ev.get())) {
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
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<std::vector<api::config_entry>>>
upstream_admin::describe_broker_configs(std::int32_t node_id) {
    auto blocking_job = [rk = rk_, timeout = timeout_, node_id] {
        return describe_configs(rk, RD_KAFKA_RESOURCE_BROKER, std::to_string(node_id), timeout);
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

// --- offsets and records --------------------------------------------------------------------

api::awaitable<std::vector<api::found_offset>> upstream_admin::list_offsets(
    std::vector<api::offset_query> queries, api::isolation) {
    std::vector<api::found_offset> out(queries.size());
    // Unknown topics and partitions fail fast from the producer's metadata cache, instead of
    // librdkafka waiting for a leader that will not come.
    std::map<std::string, std::int32_t> counts;
    for (const auto& q : queries) {
        if (!counts.contains(q.topic.value)) {
            auto c = co_await producer_.partitions(q.topic);
            counts[q.topic.value] = c ? *c : -1;
        }
    }
    // Earliest and latest from the partition's watermarks (one lookup per partition);
    // timestamps with offsets_for_times, in rounds that ask each partition once (it answers a
    // list keyed by partition). compat: 2.0.2 has no ListOffsets with an isolation level, so a
    // read_committed `latest` is the high watermark.
    std::vector<std::size_t> by_watermark;
    std::vector<std::size_t> by_time;
    for (std::size_t i = 0; i < queries.size(); ++i) {
        const auto& q = queries[i];
        const auto count = counts[q.topic.value];
        if (count < 0 || q.partition.value < 0 || q.partition.value >= count) {
            out[i].error = api::backend_error(
                api::make_error_code(api::errc::unknown_topic_or_partition),
                count < 0 ? fmt::format("topic '{}' does not exist", q.topic.value)
                          : fmt::format("topic '{}' has no partition {}", q.topic.value,
                                        q.partition.value));
            continue;
        }
        switch (q.spec.what) {
            case api::offset_spec::kind::earliest:
            case api::offset_spec::kind::earliest_local:
            case api::offset_spec::kind::latest:
                by_watermark.push_back(i);
                break;
            case api::offset_spec::kind::timestamp:
                by_time.push_back(i);
                break;
            case api::offset_spec::kind::latest_tiered:
                break;  // no tiered storage: no such offset (-1)
            case api::offset_spec::kind::max_timestamp:
                out[i].error = api::backend_error(
                    api::make_error_code(api::errc::unsupported),
                    "max_timestamp offsets need ListOffsets v7, which librdkafka 2.0.2 lacks");
                break;
        }
    }
    if (!by_watermark.empty() || !by_time.empty()) {
        auto blocking_job = [&, rk = rk_, ms = static_cast<int>(timeout_.count())] {
            struct marks {
                rd_kafka_resp_err_t err;
                std::int64_t low;
                std::int64_t high;
            };
            std::map<std::pair<std::string, std::int32_t>, marks> known;
            for (auto i : by_watermark) {
                const auto& q = queries[i];
                auto key = std::make_pair(q.topic.value, q.partition.value);
                auto it = known.find(key);
                if (it == known.end()) {
                    marks m{};
                    m.err = rd_kafka_query_watermark_offsets(rk, q.topic.value.c_str(),
                                                             q.partition.value, &m.low, &m.high,
                                                             ms);
                    it = known.emplace(key, m).first;
                }
                if (it->second.err) {
                    out[i].error = to_backend_error(it->second.err);
                } else {
                    out[i].off = offset(q.spec.what == api::offset_spec::kind::latest
                                            ? it->second.high
                                            : it->second.low);
                }
            }
            std::vector<std::size_t> pending = by_time;
            while (!pending.empty()) {
                rk_partitions_ptr list(rd_kafka_topic_partition_list_new(
                    static_cast<int>(pending.size())));
                std::vector<std::size_t> round;
                std::vector<std::size_t> later;
                for (auto i : pending) {
                    const auto& q = queries[i];
                    if (rd_kafka_topic_partition_list_find(list.get(), q.topic.value.c_str(),
                                                           q.partition.value)) {
                        later.push_back(i);
                        continue;
                    }
                    rd_kafka_topic_partition_list_add(list.get(), q.topic.value.c_str(),
                                                      q.partition.value)
                        ->offset = q.spec.timestamp_ms;
                    round.push_back(i);
                }
                const auto err = rd_kafka_offsets_for_times(rk, list.get(), ms);
                for (auto i : round) {
                    const auto& q = queries[i];
                    const auto* p = rd_kafka_topic_partition_list_find(
                        list.get(), q.topic.value.c_str(), q.partition.value);
                    if (err) {
                        out[i].error = to_backend_error(err);
                    } else if (!p || p->err) {
                        out[i].error = to_backend_error(
                            p ? p->err : RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION);
                    } else {
                        out[i].off = offset(p->offset);
                    }
                }
                pending = std::move(later);
            }
            return 0;
        };
        co_await run_blocking(pool_, std::move(blocking_job));
    }
    for (const auto& f : out) {
        monitor_.count_error(f.error);
    }
    co_return out;
}

api::awaitable<std::vector<api::backend_result<offset>>> upstream_admin::delete_records(
    std::vector<api::delete_records_request> reqs) {
    using answer = std::vector<api::backend_result<offset>>;
    auto blocking_job = [rk = rk_, timeout = timeout_, reqs]() -> answer {
        answer out;
        rk_partitions_ptr list(rd_kafka_topic_partition_list_new(static_cast<int>(reqs.size())));
        for (const auto& q : reqs) {
            rd_kafka_topic_partition_list_add(list.get(), q.topic.value.c_str(),
                                              q.partition.value)
                ->offset = q.before.value < 0 ? RD_KAFKA_OFFSET_END : q.before.value;
        }
        rd_kafka_DeleteRecords_t* del = rd_kafka_DeleteRecords_new(list.get());
        auto ev = admin_request(rk, RD_KAFKA_ADMIN_OP_DELETERECORDS, timeout, false,
                                [&](auto* options, auto* queue) {
                                    rd_kafka_DeleteRecords(rk, &del, 1, options, queue);
                                });
        rd_kafka_DeleteRecords_destroy(del);
        api::backend_error call_error;
        if (!ev) {
            call_error = timed_out("DeleteRecords", timeout);
        } else {
            call_error = event_error(ev.get());
        }
        const rd_kafka_topic_partition_list_t* answered = nullptr;
        if (!call_error) {
            const auto* result = rd_kafka_event_DeleteRecords_result(ev.get());
            answered = result ? rd_kafka_DeleteRecords_result_offsets(result) : nullptr;
        }
        for (const auto& q : reqs) {
            if (call_error) {
                out.push_back(api::backend_failure(call_error));
                continue;
            }
            const rd_kafka_topic_partition_t* p =
                answered ? rd_kafka_topic_partition_list_find(answered, q.topic.value.c_str(),
                                                              q.partition.value)
                         : nullptr;
            if (!p) {
                out.push_back(api::backend_failure(
                    api::make_error_code(api::errc::unknown),
                    fmt::format("DeleteRecords did not answer {}-{}", q.topic.value,
                                q.partition.value)));
            } else if (p->err) {
                out.push_back(api::backend_failure(to_backend_error(p->err)));
            } else {
                out.push_back(offset(p->offset));
            }
        }
        return out;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    for (const auto& one : r) {
        if (!one) {
            monitor_.count_error(one.error());
        }
    }
    co_return r;
}

// --- groups --------------------------------------------------------------------------------

api::awaitable<api::backend_result<std::vector<api::listed_group>>>
upstream_admin::list_groups() {
    auto blocking_job = [rk = rk_, timeout = timeout_]()
                                              -> api::backend_result<std::vector<api::listed_group>> {
        auto ev = admin_request(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS, timeout, false,
                                [&](auto* options, auto* queue) {
                                    rd_kafka_ListConsumerGroups(rk, options, queue);
                                });
        if (!ev) {
            return api::backend_failure(timed_out("ListGroups", timeout));
        }
        if (auto e = event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        const auto* result = rd_kafka_event_ListConsumerGroups_result(ev.get());
        if (!result) {
            return std::vector<api::listed_group>{};
        }
        size_t n_errors = 0;
        const rd_kafka_error_t** errors =
            rd_kafka_ListConsumerGroups_result_errors(result, &n_errors);
        size_t n = 0;
        const rd_kafka_ConsumerGroupListing_t** valid =
            rd_kafka_ListConsumerGroups_result_valid(result, &n);
        if (n == 0 && n_errors > 0) {
            return api::backend_failure(error_of(errors[0]));  // no broker answered
        }
        std::vector<api::listed_group> out;
        for (size_t i = 0; i < n; ++i) {
            api::listed_group g;
            g.group_id = group_id(rd_kafka_ConsumerGroupListing_group_id(valid[i]));
            g.protocol_type =
                rd_kafka_ConsumerGroupListing_is_simple_consumer_group(valid[i]) ? ""
                                                                                 : "consumer";
            g.state = rd_kafka_consumer_group_state_name(
                rd_kafka_ConsumerGroupListing_state(valid[i]));
            g.type = "classic";
            out.push_back(std::move(g));
        }
        std::sort(out.begin(), out.end(),
                  [](const auto& a, const auto& b) { return a.group_id < b.group_id; });
        return out;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<api::group_view>> upstream_admin::describe_group(group_id id) {
    auto blocking_job = [rk = rk_, timeout = timeout_,
                                           g = id.value]() -> api::backend_result<api::group_view> {
        const char* names[] = {g.c_str()};
        auto ev = admin_request(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS, timeout, false,
                                [&](auto* options, auto* queue) {
                                    rd_kafka_DescribeConsumerGroups(rk, names, 1, options, queue);
                                });
        if (!ev) {
            return api::backend_failure(timed_out("DescribeGroups", timeout));
        }
        if (auto e = event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        size_t n = 0;
        const auto* result = rd_kafka_event_DescribeConsumerGroups_result(ev.get());
        const rd_kafka_ConsumerGroupDescription_t** groups =
            result ? rd_kafka_DescribeConsumerGroups_result_groups(result, &n) : nullptr;
        const auto not_found = [&] {
            return api::backend_failure(api::make_error_code(api::errc::group_id_not_found),
                                        fmt::format("group '{}' does not exist", g));
        };
        if (n == 0) {
            return not_found();
        }
        const auto* desc = groups[0];
        if (auto e = error_of(rd_kafka_ConsumerGroupDescription_error(desc))) {
            return api::backend_failure(std::move(e));
        }
        const auto state = rd_kafka_ConsumerGroupDescription_state(desc);
        if (state == RD_KAFKA_CONSUMER_GROUP_STATE_DEAD) {
            return not_found();  // Kafka describes an unknown group as Dead
        }
        api::group_view view;
        view.group_id = group_id(g);
        view.type = "classic";
        view.state = rd_kafka_consumer_group_state_name(state);
        view.protocol_type =
            rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(desc) ? "" : "consumer";
        if (const char* a = rd_kafka_ConsumerGroupDescription_partition_assignor(desc)) {
            view.protocol = a;
        }
        const size_t members = rd_kafka_ConsumerGroupDescription_member_count(desc);
        for (size_t m = 0; m < members; ++m) {
            const auto* md = rd_kafka_ConsumerGroupDescription_member(desc, m);
            api::group_view::member mv;
            mv.member_id = rd_kafka_MemberDescription_consumer_id(md);
            mv.instance_id = optional_string(rd_kafka_MemberDescription_group_instance_id(md));
            mv.client_id = rd_kafka_MemberDescription_client_id(md);
            mv.client_host = rd_kafka_MemberDescription_host(md);
            if (const auto* a = rd_kafka_MemberDescription_assignment(md)) {
                if (const auto* parts = rd_kafka_MemberAssignment_partitions(a)) {
                    for (int p = 0; p < parts->cnt; ++p) {
                        mv.assignment[topic_name(parts->elems[p].topic)].push_back(
                            partition_id(parts->elems[p].partition));
                    }
                }
            }
            for (auto& [t, ps] : mv.assignment) {
                std::sort(ps.begin(), ps.end());
            }
            view.members.push_back(std::move(mv));
        }
        ev.reset();

        auto committed = fetch_committed(rk, g, nullptr, timeout);
        if (!committed) {
            return api::backend_failure(committed.error());
        }
        auto& list = **committed;
        // The high watermark of each committed partition (-1 when the partition is gone).
        for (int i = 0; i < list.cnt; ++i) {
            const auto& c = list.elems[i];
            std::int64_t low = -1;
            std::int64_t high = -1;
            if (rd_kafka_query_watermark_offsets(rk, c.topic, c.partition, &low, &high,
                                                 static_cast<int>(timeout.count()))) {
                high = -1;
            }
            view.offsets.push_back(lag_of(c, high));
        }
        std::sort(view.offsets.begin(), view.offsets.end(), [](const auto& a, const auto& b) {
            return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
        });
        return view;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<void>> upstream_admin::delete_group(group_id id) {
    auto blocking_job = [rk = rk_, timeout = timeout_,
                                           g = id.value]() -> api::backend_result<void> {
        rd_kafka_DeleteGroup_t* dg = rd_kafka_DeleteGroup_new(g.c_str());
        auto ev = admin_request(rk, RD_KAFKA_ADMIN_OP_DELETEGROUPS, timeout, false,
                                [&](auto* options, auto* queue) {
                                    rd_kafka_DeleteGroups(rk, &dg, 1, options, queue);
                                });
        rd_kafka_DeleteGroup_destroy(dg);
        if (!ev) {
            return api::backend_failure(timed_out("DeleteGroups", timeout));
        }
        if (auto e = event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        size_t n = 0;
        const auto* result = rd_kafka_event_DeleteGroups_result(ev.get());
        const rd_kafka_group_result_t** groups =
            result ? rd_kafka_DeleteGroups_result_groups(result, &n) : nullptr;
        if (n > 0) {
            if (auto e = error_of(rd_kafka_group_result_error(groups[0]))) {
                return api::backend_failure(std::move(e));
            }
        }
        return {};
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<std::vector<api::committed_offset>>>
upstream_admin::committed_offsets(group_id id, std::vector<api::topic_partition> parts) {
    auto blocking_job = [rk = rk_, timeout = timeout_, g = id.value,
                                           parts = std::move(parts)]()
                                              -> api::backend_result<std::vector<api::committed_offset>> {
        rk_partitions_ptr asked;
        if (!parts.empty()) {
            asked.reset(rd_kafka_topic_partition_list_new(static_cast<int>(parts.size())));
            for (const auto& tp : parts) {
                rd_kafka_topic_partition_list_add(asked.get(), tp.topic.value.c_str(),
                                                  tp.partition.value);
            }
        }
        auto committed = fetch_committed(rk, g, asked.get(), timeout);
        if (!committed) {
            return api::backend_failure(committed.error());
        }
        std::vector<api::committed_offset> out;
        const auto& list = **committed;
        for (int i = 0; i < list.cnt; ++i) {
            const auto& p = list.elems[i];
            if (parts.empty() && p.offset < 0) {
                continue;  // "every committed partition"
            }
            api::committed_offset c;
            c.tp = api::topic_partition{topic_name(p.topic), partition_id(p.partition)};
            c.next = offset(p.offset >= 0 ? p.offset : -1);
            if (p.metadata && p.metadata_size > 0) {
                c.metadata = std::string(static_cast<const char*>(p.metadata), p.metadata_size);
            }
            out.push_back(std::move(c));
        }
        std::sort(out.begin(), out.end(),
                  [](const auto& a, const auto& b) { return a.tp < b.tp; });
        return out;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<void>> upstream_admin::alter_committed_offsets(
    group_id id, std::vector<api::offset_commit> offsets) {
    auto blocking_job = [rk = rk_, timeout = timeout_, g = id.value,
                                           offsets = std::move(offsets)]()
                                              -> api::backend_result<void> {
        rk_partitions_ptr list(rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size())));
        for (const auto& c : offsets) {
            auto* p = rd_kafka_topic_partition_list_add(list.get(), c.tp.topic.value.c_str(),
                                                        c.tp.partition.value);
            p->offset = c.next.value;
            if (c.metadata) {
                // The list frees it: librdkafka's own allocator.
                void* copy = rd_kafka_mem_malloc(rk, c.metadata->size() + 1);
                std::memcpy(copy, c.metadata->data(), c.metadata->size());
                p->metadata = copy;
                p->metadata_size = c.metadata->size();
            }
        }
        rd_kafka_AlterConsumerGroupOffsets_t* req =
            rd_kafka_AlterConsumerGroupOffsets_new(g.c_str(), list.get());
        auto ev = admin_request(rk, RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS, timeout, false,
                                [&](auto* options, auto* queue) {
                                    rd_kafka_AlterConsumerGroupOffsets(rk, &req, 1, options,
                                                                       queue);
                                });
        rd_kafka_AlterConsumerGroupOffsets_destroy(req);
        if (!ev) {
            return api::backend_failure(timed_out("OffsetCommit", timeout));
        }
        if (auto e = event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        size_t n = 0;
        const auto* result = rd_kafka_event_AlterConsumerGroupOffsets_result(ev.get());
        const rd_kafka_group_result_t** groups =
            result ? rd_kafka_AlterConsumerGroupOffsets_result_groups(result, &n) : nullptr;
        if (n == 0) {
            return {};
        }
        if (auto e = error_of(rd_kafka_group_result_error(groups[0]))) {
            return api::backend_failure(std::move(e));
        }
        if (const auto* parts = rd_kafka_group_result_partitions(groups[0])) {
            for (int i = 0; i < parts->cnt; ++i) {
                if (parts->elems[i].err) {
                    return api::backend_failure(to_backend_error(parts->elems[i].err));
                }
            }
        }
        return {};
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

}  // namespace sluice::backend::upstream
