// group_coordinator: listing, describing and the views (ListGroups, DescribeGroups,
// ConsumerGroupDescribe, GET /v1/groups, the lag metrics). Each group is read under its own
// lock, one group at a time; high watermarks are read after the group is released.
#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "backend/group/consumer_protocol.h"
#include "backend/group/errc.h"
#include "backend/group/group_coordinator.h"
#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "protocol/kafka/record_batch.h"

#include <unistd.h>

namespace sluice::backend::group {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

/// The timestamp of the batch holding `from` (or the first one after it; `from` is at or
/// after the log start): the time of the oldest record a group has not consumed, to within
/// one batch. -1 when nothing can be read.
std::int64_t batch_timestamp_at(log::partition_log& part, offset from) {
    log::read_options opts;
    auto r = part.read(from, 1, opts);
    if (!r || r->records.chunks().empty()) {
        return -1;
    }
    std::array<std::byte, protocol::kafka::batch_header_size> head{};
    const auto& chunk = r->records.chunks().front();
    if (const auto* m = std::get_if<protocol::shared_bytes>(&chunk)) {
        if (m->data.size() < head.size()) {
            return -1;
        }
        std::copy_n(m->data.data(), head.size(), head.data());
    } else {
        const auto& region = std::get<protocol::file_region>(chunk);
        if (region.length < head.size() ||
            ::pread(region.fd, head.data(), head.size(), static_cast<off_t>(region.position)) !=
                static_cast<ssize_t>(head.size())) {
            return -1;
        }
    }
    auto h = protocol::kafka::read_batch_header(protocol::bytes_view(head.data(), head.size()));
    if (!h) {
        return -1;
    }
    return h->uses_log_append_time() ? h->max_timestamp : h->base_timestamp;
}

api::topic_partitions to_api(const topic_partitions& tp) {
    api::topic_partitions out;
    for (const auto& [id, parts] : tp) {
        auto& set = out[id];
        for (std::int32_t p : parts) {
            set.insert(partition_id(p));
        }
    }
    return out;
}

std::map<topic_name, std::vector<partition_id>> names_of(const topic_partitions& tp,
                                                         const std::map<uuid, std::string>& names) {
    std::map<topic_name, std::vector<partition_id>> out;
    for (const auto& [id, parts] : tp) {
        auto it = names.find(id);
        auto& list = out[topic_name(it == names.end() ? id.to_base64() : it->second)];
        for (std::int32_t p : parts) {
            list.emplace_back(p);
        }
    }
    return out;
}

/// A group as ListGroups shows it; nullopt for an entry that holds no group.
std::optional<api::listed_group> listed(const group_entry& e) {
    api::listed_group g;
    g.group_id = sluice::group_id(e.id);
    if (e.kind == group_kind::classic) {
        if (!e.classic) {
            return std::nullopt;
        }
        g.protocol_type = e.classic->protocol_type().value_or("");
        g.state = to_string(e.classic->state());
        g.type = "classic";
    } else {
        if (!e.consumer) {
            return std::nullopt;
        }
        g.protocol_type = consumer_protocol_type;
        g.state = e.consumer->state();
        g.type = "consumer";
    }
    return g;
}

void describe_classic(const classic_group& g, api::described_group& d) {
    d.state = to_string(g.state());
    d.protocol_type = g.protocol_type().value_or("");
    const bool stable = g.in(classic_state::stable);
    if (stable) {
        d.protocol_data = g.protocol_name().value_or("");
    }
    for (const auto& [mid, m] : g.members()) {
        api::described_member dm;
        dm.member_id = mid;
        dm.group_instance_id = m.group_instance_id;
        dm.client_id = m.client_id;
        dm.client_host = m.client_host;
        if (stable) {
            dm.metadata = m.metadata(d.protocol_data);
            dm.assignment = m.assignment;
        }
        d.members.push_back(std::move(dm));
    }
}

void describe_consumer(const consumer_group& g, const std::string& default_assignor,
                       api::consumer_group_description& d) {
    d.state = g.state();
    d.group_epoch = g.group_epoch();
    d.assignment_epoch = g.assignment_epoch();
    d.assignor_name = g.preferred_assignor(default_assignor);
    for (const auto& [mid, m] : g.members()) {
        api::consumer_member_description md;
        md.member_id = mid;
        md.instance_id = m.instance_id;
        md.rack_id = m.rack_id;
        md.member_epoch = m.member_epoch;
        md.client_id = m.client_id;
        md.client_host = m.client_host;
        for (const auto& t : m.subscribed_topic_names) {
            md.subscribed_topic_names.emplace_back(t);
        }
        md.subscribed_topic_regex = m.subscribed_topic_regex;
        md.assignment = to_api(m.assigned);
        md.target_assignment = to_api(g.target_of(mid));
        d.members.push_back(std::move(md));
    }
}

}  // namespace

std::vector<api::listed_group> group_coordinator::list_groups_now(
    const std::vector<std::string>& states_filter, const std::vector<std::string>& types_filter) {
    std::set<std::string> states;
    for (const auto& s : states_filter) {
        states.insert(lower(s));
    }
    std::set<std::string> types;
    for (const auto& t : types_filter) {
        types.insert(lower(t));
    }
    std::vector<api::listed_group> out;
    for (const auto& id : registry_.ids()) {
        std::optional<api::listed_group> g;
        if (auto e = registry_.find(id)) {
            g = listed(*e);
        }
        if (!g || (!states.empty() && !states.contains(lower(g->state))) ||
            (!types.empty() && !types.contains(g->type))) {
            continue;
        }
        out.push_back(std::move(*g));
    }
    return out;
}

std::vector<api::described_group> group_coordinator::describe_groups_now(
    const std::vector<sluice::group_id>& ids) {
    std::vector<api::described_group> out;
    const auto loading = check_loaded();
    for (const auto& group : ids) {
        api::described_group& d = out.emplace_back();
        d.group_id = group;
        if (loading) {
            d.error = loading;
            continue;
        }
        auto e = registry_.find(group.value);
        if (!e || e->kind != group_kind::classic || !e->classic) {
            d.state = "Dead";
            d.error = make_error_code(errc::group_id_not_found);
            continue;
        }
        describe_classic(*e->classic, d);
    }
    return out;
}

std::vector<api::consumer_group_description> group_coordinator::describe_consumer_groups_now(
    const std::vector<sluice::group_id>& ids) {
    std::vector<api::consumer_group_description> out;
    const auto loading = check_loaded();
    for (const auto& group : ids) {
        api::consumer_group_description& d = out.emplace_back();
        d.group_id = group;
        if (loading) {
            d.error = loading;
            continue;
        }
        auto e = registry_.find(group.value);
        if (!e || e->kind != group_kind::consumer || !e->consumer) {
            const bool exists = e && (e->classic || e->consumer);
            d.error = api::backend_error(make_error_code(errc::group_id_not_found),
                                         exists ? "Group " + group.value + " is not a consumer group."
                                                : "Group " + group.value + " not found.");
            d.state = "Dead";
            continue;
        }
        describe_consumer(*e->consumer, cfg_.consumer_assignors.front(), d);
    }
    return out;
}

boost::asio::awaitable<std::vector<api::listed_group>> group_coordinator::list_groups(
    std::vector<std::string> states, std::vector<std::string> types) {
    co_return list_groups_now(states, types);
}

boost::asio::awaitable<std::vector<api::described_group>> group_coordinator::describe_groups(
    std::vector<sluice::group_id> ids) {
    co_return describe_groups_now(ids);
}

boost::asio::awaitable<std::vector<api::consumer_group_description>>
group_coordinator::describe_consumer_groups(std::vector<sluice::group_id> ids) {
    co_return describe_consumer_groups_now(ids);
}

std::optional<api::group_view> group_coordinator::view_group(const sluice::group_id& id) {
    auto views = build_views({id.value});
    if (views.empty()) {
        return std::nullopt;
    }
    return std::move(views.front());
}

std::vector<api::group_view> group_coordinator::view_groups() {
    return build_views(registry_.ids());
}

std::vector<api::group_view> group_coordinator::build_views(const std::vector<std::string>& ids) {
    // Topic ids -> names for KIP-848 assignments (read before any group is locked).
    std::map<uuid, std::string> names;
    for (const auto& t : log_.list_topics()) {
        names[t.id] = t.name;
    }
    std::vector<api::group_view> out;
    for (const auto& group_id : ids) {
        auto e = registry_.find(group_id);
        if (!e || (!e->classic && !e->consumer)) {
            continue;
        }
        api::group_view& v = out.emplace_back();
        v.group_id = sluice::group_id(group_id);
        if (e->kind == group_kind::classic && e->classic) {
            const auto& g = *e->classic;
            v.type = "classic";
            v.state = to_string(g.state());
            v.protocol_type = g.protocol_type().value_or("");
            v.protocol = g.protocol_name().value_or("");
            v.generation = g.generation();
            const bool readable =
                v.protocol_type == consumer_protocol_type &&
                (g.in(classic_state::stable) || g.in(classic_state::preparing_rebalance));
            for (const auto& [mid, m] : g.members()) {
                api::group_view::member vm;
                vm.member_id = mid;
                vm.instance_id = m.group_instance_id;
                vm.client_id = m.client_id;
                vm.client_host = m.client_host;
                if (readable) {
                    if (auto a = parse_assignment(
                            protocol::bytes_view(m.assignment.data(), m.assignment.size()))) {
                        for (auto& [topic, parts] : *a) {
                            auto& list = vm.assignment[topic_name(topic)];
                            for (std::int32_t p : parts) {
                                list.emplace_back(p);
                            }
                        }
                    }
                }
                v.members.push_back(std::move(vm));
            }
        } else if (e->consumer) {
            const auto& g = *e->consumer;
            v.type = "consumer";
            v.state = g.state();
            v.protocol_type = consumer_protocol_type;
            v.protocol = g.preferred_assignor(cfg_.consumer_assignors.front());
            v.generation = g.group_epoch();
            for (const auto& [mid, m] : g.members()) {
                api::group_view::member vm;
                vm.member_id = mid;
                vm.instance_id = m.instance_id;
                vm.client_id = m.client_id;
                vm.client_host = m.client_host;
                vm.assignment = names_of(m.assigned, names);
                v.members.push_back(std::move(vm));
            }
        }
        for (const auto& [topic, parts] : e->offsets) {
            for (const auto& [p, c] : parts) {
                api::group_view::partition vp;
                vp.topic = topic_name(topic);
                vp.partition = partition_id(p);
                vp.committed = c.committed;
                vp.metadata = c.metadata;
                v.offsets.push_back(std::move(vp));
            }
        }
    }
    // High watermarks once every group is released: the log takes its own locks. The memo is
    // taken out while the segments are read (a concurrent call starts from an empty one).
    std::map<lag_time_key, lag_time> memo;
    {
        std::lock_guard lock(lag_times_mutex_);
        memo.swap(lag_times_);
    }
    std::map<lag_time_key, lag_time> used;
    for (auto& v : out) {
        for (auto& vp : v.offsets) {
            if (auto part = log_.partition(vp.topic.value, vp.partition)) {
                vp.log_end = part->high_watermark();
                if (vp.committed.value >= 0) {
                    vp.lag = std::max<std::int64_t>(0, vp.log_end - vp.committed);
                }
                if (vp.lag > 0) {
                    const offset from(std::max(vp.committed.value, part->log_start_offset().value));
                    const lag_time_key key{part.get(), from.value};
                    auto it = memo.find(key);
                    if (it != memo.end() && it->second.partition.lock() == part) {
                        vp.oldest_unconsumed_timestamp = it->second.timestamp;
                    } else {
                        vp.oldest_unconsumed_timestamp = batch_timestamp_at(*part, from);
                    }
                    if (vp.oldest_unconsumed_timestamp >= 0) {
                        used.try_emplace(key, lag_time{part, vp.oldest_unconsumed_timestamp});
                    }
                }
                vp.retention_ms = part->config()->retention_ms;
            }
        }
    }
    {
        std::lock_guard lock(lag_times_mutex_);
        lag_times_.swap(used);
    }
    return out;
}

}  // namespace sluice::backend::group
