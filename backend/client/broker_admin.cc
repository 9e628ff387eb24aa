#include "backend/client/broker_admin.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace sluice::backend::client {
namespace {

/// A topic as the one-node topology shows it: this node leads every partition and is its
/// only replica.
api::topic_info topic_info_of(const api::topic_description& d, std::int32_t self) {
    api::topic_info t;
    t.name = d.name;
    t.id = d.id;
    t.internal = d.internal;
    t.partitions.reserve(static_cast<std::size_t>(std::max(d.partitions, 0)));
    for (std::int32_t p = 0; p < d.partitions; ++p) {
        api::partition_info pi;
        pi.partition = partition_id(p);
        pi.leader = self;
        pi.replicas = {self};
        pi.isr = {self};
        t.partitions.push_back(std::move(pi));
    }
    return t;
}

api::backend_error unknown_topic_error(const topic_name& name) {
    return api::backend_error(api::errc::unknown_topic_or_partition,
                              fmt::format("Topic '{}' does not exist", name.value));
}

/// The first error of a commit or offset fetch answer, with the partition it concerns.
api::backend_error first_commit_error(const api::offset_commit_result& res) {
    for (const auto& t : res.topics) {
        for (const auto& p : t.partitions) {
            if (p.error) {
                return p.error;
            }
        }
    }
    return {};
}

/// The native admin: every call is the broker level's, answered at once (no remote cluster,
/// so no deadline is ever reached).
class broker_admin final : public api::admin {
public:
    broker_admin(api::topics& topics, api::records& records, api::groups& groups,
                 broker_client_options opts)
        : topics_(topics), records_(records), groups_(groups), opts_(std::move(opts)) {}

    // --- topology -------------------------------------------------------------------------
    api::awaitable<api::backend_result<api::cluster_info>> describe_cluster() override {
        api::cluster_info c;
        c.cluster_id = opts_.cluster_id;
        c.controller_id = self();
        c.brokers.push_back(opts_.self);
        co_return c;
    }

    api::awaitable<api::backend_result<std::vector<api::topic_info>>> list_topics() override {
        auto all = co_await topics_.list();
        std::vector<api::topic_info> out;
        out.reserve(all.size());
        for (const auto& d : all) {
            out.push_back(topic_info_of(d, self()));
        }
        std::sort(out.begin(), out.end(),
                  [](const auto& a, const auto& b) { return a.name.value < b.name.value; });
        co_return out;
    }

    api::awaitable<api::backend_result<api::topic_info>> describe_topic(
        topic_name name) override {
        auto d = co_await topics_.describe(name);
        if (!d) {
            co_return std::unexpected(unknown_topic_error(name));
        }
        co_return topic_info_of(*d, self());
    }

    // --- topics and configs ---------------------------------------------------------------
    api::awaitable<api::backend_result<api::topic_info>> create_topic(
        api::new_topic spec) override {
        auto created = co_await topics_.create(std::move(spec));
        if (!created) {
            co_return std::unexpected(std::move(created.error()));
        }
        co_return topic_info_of(created->topic, self());
    }

    api::awaitable<api::backend_result<void>> delete_topic(topic_name name) override {
        co_return co_await topics_.remove(std::move(name));
    }

    api::awaitable<api::backend_result<void>> create_partitions(topic_name name,
                                                                std::int32_t total) override {
        co_return co_await topics_.create_partitions(std::move(name), total, false);
    }

    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_topic_configs(
        topic_name name) override {
        co_return co_await topics_.describe_configs(std::move(name));
    }

    api::awaitable<api::backend_result<void>> alter_topic_configs(
        topic_name name, std::vector<api::config_change> changes, bool validate_only) override {
        co_return co_await topics_.alter_configs(std::move(name), std::move(changes),
                                                 validate_only);
    }

    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_broker_configs(
        std::int32_t node_id) override {
        if (node_id != self()) {
            co_return api::backend_failure(
                api::errc::invalid_request,
                fmt::format("Broker {} is not in the cluster (the only broker is {})", node_id,
                            self()));
        }
        co_return topics_.backend_configs();
    }

    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_cluster_configs()
        override {
        std::vector<api::config_entry> out;
        if (opts_.broker_configs == nullptr) {
            co_return out;
        }
        // Each default set, with what lies under it (the static setting, Kafka's default) as
        // the backend's own entry of that name shows it.
        const auto own = topics_.backend_configs();
        for (const auto& [name, value] : opts_.broker_configs->cluster_default()) {
            api::config_entry e;
            e.name = name;
            e.value = value;
            e.source = api::config_source::dynamic_default_broker;
            e.synonyms.push_back(api::config_synonym{name, value, e.source});
            const auto it = std::find_if(own.begin(), own.end(),
                                         [&](const auto& c) { return c.name == name; });
            if (it != own.end()) {
                e.type = it->type;
                e.documentation = it->documentation;
                for (const auto& syn : it->synonyms) {
                    if (syn.source == api::config_source::static_broker ||
                        syn.source == api::config_source::default_config) {
                        e.synonyms.push_back(syn);
                    }
                }
            }
            out.push_back(std::move(e));
        }
        co_return out;
    }

    api::awaitable<api::backend_result<void>> alter_broker_configs(
        std::optional<std::int32_t> node_id, std::vector<api::config_change> changes,
        bool validate_only) override {
        if (node_id && *node_id != self()) {
            co_return api::backend_failure(
                api::errc::invalid_request,
                fmt::format("Broker {} is not in the cluster (the only broker is {})", *node_id,
                            self()));
        }
        if (opts_.broker_configs == nullptr) {
            co_return api::backend_failure(api::make_error_code(api::errc::unsupported),
                                           "dynamic broker configs are not kept here");
        }
        // Named first: g++ 12 mishandles a conditional's temporaries inside a co_await.
        std::string resource;
        if (node_id) {
            resource = std::to_string(*node_id);
        }
        auto done =
            co_await opts_.broker_configs->alter(std::move(resource), std::move(changes),
                                                 validate_only);
        co_return done;
    }

    // --- offsets and records --------------------------------------------------------------
    api::awaitable<std::vector<api::found_offset>> list_offsets(
        std::vector<api::offset_query> queries, api::isolation isolation) override {
        co_return co_await records_.list_offsets(std::move(queries), isolation);
    }

    api::awaitable<std::vector<api::backend_result<offset>>> delete_records(
        std::vector<api::delete_records_request> reqs) override {
        co_return co_await records_.delete_records(std::move(reqs));
    }

    // --- groups ---------------------------------------------------------------------------
    api::awaitable<api::backend_result<std::vector<api::listed_group>>> list_groups() override {
        if (!groups_.loaded()) {
            co_return api::backend_failure(api::errc::coordinator_loading,
                                           "The group coordinator is still loading");
        }
        std::vector<std::string> states;
        std::vector<std::string> types;
        auto listed = co_await groups_.list_groups(std::move(states), std::move(types));
        std::sort(listed.begin(), listed.end(), [](const auto& a, const auto& b) {
            return a.group_id.value < b.group_id.value;
        });
        co_return listed;
    }

    api::awaitable<api::backend_result<api::group_view>> describe_group(group_id id) override {
        if (!groups_.loaded()) {
            co_return api::backend_failure(api::errc::coordinator_loading,
                                           "The group coordinator is still loading");
        }
        auto view = groups_.view_group(id);
        if (!view) {
            co_return api::backend_failure(api::errc::group_id_not_found,
                                           fmt::format("Group '{}' does not exist", id.value));
        }
        co_return std::move(*view);
    }

    api::awaitable<api::backend_result<void>> delete_group(group_id id) override {
        std::vector<group_id> ids{id};
        auto done = co_await groups_.delete_groups(std::move(ids));
        for (auto& d : done) {
            if (d.error) {
                co_return std::unexpected(std::move(d.error));
            }
        }
        co_return api::backend_result<void>{};
    }

    api::awaitable<api::backend_result<std::vector<api::committed_offset>>> committed_offsets(
        group_id id, std::vector<api::topic_partition> parts) override {
        api::offset_fetch_request req;
        req.group_id = id;
        if (!parts.empty()) {
            std::map<topic_name, std::vector<partition_id>> by_topic;
            for (const auto& tp : parts) {
                by_topic[tp.topic].push_back(tp.partition);
            }
            std::vector<api::topic_partition_list> lists;
            for (auto& [t, ps] : by_topic) {
                lists.push_back(api::topic_partition_list{t, std::move(ps)});
            }
            req.topics = std::move(lists);
        }
        std::vector<api::offset_fetch_request> reqs;
        reqs.push_back(std::move(req));
        auto answers = co_await groups_.fetch_offsets(std::move(reqs));
        std::vector<api::committed_offset> out;
        for (auto& a : answers) {
            if (a.error) {
                co_return std::unexpected(std::move(a.error));
            }
            for (auto& t : a.topics) {
                for (auto& p : t.partitions) {
                    if (p.error) {
                        co_return std::unexpected(std::move(p.error));
                    }
                    if (parts.empty() && p.committed.value < 0) {
                        continue;  // every committed partition: only those with an offset
                    }
                    out.push_back(api::committed_offset{
                        api::topic_partition{t.topic, p.partition}, p.committed,
                        std::move(p.metadata)});
                }
            }
        }
        std::sort(out.begin(), out.end(),
                  [](const auto& a, const auto& b) { return a.tp < b.tp; });
        co_return out;
    }

    /// As Kafka's AdminClient does: generation -1 and no member id, which the coordinator takes
    /// from an empty (or new) group only; a group with members answers unknown_member_id
    /// (rebalance_in_progress while it completes a rebalance).
    api::awaitable<api::backend_result<void>> alter_committed_offsets(
        group_id id, std::vector<api::offset_commit> offsets) override {
        api::offset_commit_request req;
        req.group_id = id;
        req.generation_id_or_member_epoch = -1;
        std::map<topic_name, std::vector<api::commit_partition>> by_topic;
        for (auto& c : offsets) {
            api::commit_partition cp;
            cp.partition = c.tp.partition;
            cp.committed = c.next;
            cp.metadata = std::move(c.metadata);
            by_topic[c.tp.topic].push_back(std::move(cp));
        }
        for (auto& [t, ps] : by_topic) {
            req.topics.push_back(api::commit_topic{t, std::move(ps)});
        }
        auto res = co_await groups_.commit_offsets(std::move(req));
        if (auto e = first_commit_error(res)) {
            co_return std::unexpected(std::move(e));
        }
        co_return api::backend_result<void>{};
    }

    // --- storage: this node's log ---------------------------------------------------------
    api::awaitable<api::backend_result<api::log_sizes>> describe_log_dirs() override {
        std::vector<topic_name> every;  // empty: every topic
        const auto storage = co_await topics_.describe_storage(std::move(every));
        api::log_sizes out;
        out.replicas.reserve(storage.partitions.size());
        for (const auto& p : storage.partitions) {
            out.replicas.push_back({p.topic, p.partition, self(), p.size_bytes});
        }
        std::sort(out.replicas.begin(), out.replicas.end(), [](const auto& a, const auto& b) {
            return std::tie(a.topic.value, a.partition.value) <
                   std::tie(b.topic.value, b.partition.value);
        });
        co_return out;
    }

    // --- ACLs: the gateway's authorizer ---------------------------------------------------
    api::awaitable<api::backend_result<std::vector<api::acl_binding>>> describe_acls(
        api::acl_filter filter) override {
        if (opts_.acls == nullptr) {
            co_return no_authorizer();
        }
        co_return opts_.acls->describe_acls(filter);
    }

    api::awaitable<api::backend_result<void>> create_acls(
        std::vector<api::acl_binding> bindings) override {
        if (opts_.acls == nullptr) {
            co_return no_authorizer();
        }
        co_return opts_.acls->create_acls(std::move(bindings));
    }

    api::awaitable<api::backend_result<std::vector<api::acl_binding>>> delete_acls(
        api::acl_filter filter) override {
        if (opts_.acls == nullptr) {
            co_return no_authorizer();
        }
        co_return opts_.acls->delete_acls(filter);
    }

private:
    static std::unexpected<api::backend_error> no_authorizer() {
        // Kafka's SecurityDisabledException message.
        return api::backend_failure(api::make_error_code(api::errc::unsupported),
                                    "No Authorizer is configured on the broker");
    }
    std::int32_t self() const { return opts_.self.node_id; }

    api::topics& topics_;
    api::records& records_;
    api::groups& groups_;
    broker_client_options opts_;
};

}  // namespace

std::unique_ptr<api::admin> make_broker_admin(api::topics& topics, api::records& records,
                                              api::groups& groups,
                                              const broker_client_options& opts) {
    return std::make_unique<broker_admin>(topics, records, groups, opts);
}

}  // namespace sluice::backend::client
