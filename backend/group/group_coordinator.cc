// group_coordinator: lifecycle, the ticker, the awaitable wrappers, listing and describing.
// The protocol logic lives in group_coordinator_{classic,consumer,offsets,store}.cc.
#include "backend/group/group_coordinator.h"

#include <algorithm>
#include <cctype>

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

#include "backend/group/completion.h"
#include "backend/group/consumer_protocol.h"
#include "backend/group/errc.h"
#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "backend/logger.h"

namespace sluice::backend::group {
namespace asio = boost::asio;

namespace {

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

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

}  // namespace

coordinator_clock coordinator_clock::system() {
    return {[] {
                return std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                    .count();
            },
            [] {
                return std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                    .count();
            }};
}

group_coordinator::group_coordinator(log::log_manager& log, coordinator_config cfg,
                                     coordinator_clock clock)
    : log_(log), cfg_(std::move(cfg)), clock_(std::move(clock)) {}

group_coordinator::~group_coordinator() { stop(); }

void group_coordinator::start(std::optional<asio::any_io_executor> ticker_executor,
                              bool synchronous) {
    if (ticker_executor) {
        ticker_ex_ = ticker_executor;
        ticker_ = std::make_unique<asio::steady_timer>(*ticker_executor);
    }
    if (loaded()) {
        std::lock_guard lock(mu_);
        arm_locked();
        return;
    }
    if (synchronous) {
        load();
    } else {
        loader_ = std::thread([this] { load(); });
    }
}

void group_coordinator::stop() {
    {
        std::lock_guard lock(mu_);
        if (stopping_) {
            return;
        }
        stopping_ = true;
        timers_.clear();
        // Answer every parked call: the members retry against the restarted broker.
        for (auto& [id, e] : groups_) {
            if (!e.classic) {
                continue;
            }
            for (auto& [mid, m] : e.classic->members()) {
                api::join_group_result j;
                j.error = make_error_code(errc::coordinator_unavailable);
                j.member_id = mid;
                e.classic->complete_join(m, std::move(j));
                api::sync_group_result s;
                s.error = make_error_code(errc::coordinator_unavailable);
                e.classic->complete_sync(m, std::move(s));
            }
        }
    }
    if (loader_.joinable()) {
        loader_.join();
    }
    if (ticker_ && ticker_ex_) {
        // The timer belongs to the ticker's executor; cancel it there.
        asio::post(*ticker_ex_, [t = ticker_.get()] { t->cancel(); });
    }
}

std::error_code group_coordinator::check_loaded() const {
    if (stopping_) {
        return make_error_code(errc::coordinator_unavailable);
    }
    return loaded() ? std::error_code{} : make_error_code(errc::coordinator_loading);
}

group_coordinator::group_entry* group_coordinator::find_locked(const std::string& group_id) {
    auto it = groups_.find(group_id);
    return it == groups_.end() ? nullptr : &it->second;
}

void group_coordinator::maybe_drop_group_locked(const std::string& group_id) {
    auto* e = find_locked(group_id);
    if (e == nullptr || !e->offsets.empty()) {
        return;
    }
    const bool empty = e->kind == group_kind::classic
                           ? (!e->classic || (e->classic->in(classic_state::empty) &&
                                              e->classic->pending_members() == 0))
                           : (!e->consumer || e->consumer->empty());
    if (empty) {
        groups_.erase(group_id);
    }
}

// --- ticker ----------------------------------------------------------------------------------

void group_coordinator::arm_locked() {
    if (!ticker_ || stopping_) {
        return;
    }
    auto next = timers_.next_deadline();
    if (!next || (armed_at_ >= 0 && *next >= armed_at_)) {
        return;
    }
    armed_at_ = *next;
    const auto at = std::chrono::steady_clock::time_point(std::chrono::milliseconds(*next));
    asio::post(*ticker_ex_, [this, at] {
        ticker_->expires_at(at);
        ticker_->async_wait([this](const boost::system::error_code& ec) { on_tick(ec); });
    });
}

void group_coordinator::on_tick(const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) {
        return;  // re-armed for an earlier deadline, or stopped
    }
    std::lock_guard lock(mu_);
    if (stopping_) {
        return;
    }
    armed_at_ = -1;
    timers_.run_due(mono());
    arm_locked();
}

void group_coordinator::run_timers() {
    std::lock_guard lock(mu_);
    timers_.run_due(mono());
    arm_locked();
}

// --- awaitable wrappers ------------------------------------------------------------------------

asio::awaitable<std::error_code> group_coordinator::flush_group(sluice::group_id group) {
    const std::string& group_id = group.value;
    auto p = offsets_partition(group_id, false);
    if (!p) {
        co_return std::error_code{};
    }
    auto done = co_await p->flush_to(p->log_end_offset());
    if (!done) {
        group_log().warn("group {}: flushing the offsets log failed: {}", group_id,
                         done.error().message());
        co_return make_error_code(errc::storage_error);
    }
    co_return std::error_code{};
}

asio::awaitable<api::join_group_result> group_coordinator::join_group(api::join_group_request req) {
    auto slot =
        std::make_shared<completion<api::join_group_result>>(co_await asio::this_coro::executor);
    join_group(std::move(req), [slot](api::join_group_result r) { slot->set(std::move(r)); });
    // Nothing a member acts on is written by a join (the generation is stored at SyncGroup).
    co_return co_await slot->wait();
}

asio::awaitable<api::sync_group_result> group_coordinator::sync_group(api::sync_group_request req) {
    auto slot =
        std::make_shared<completion<api::sync_group_result>>(co_await asio::this_coro::executor);
    const sluice::group_id group_id = req.group_id;
    sync_group(std::move(req), [slot](api::sync_group_result r) { slot->set(std::move(r)); });
    auto r = co_await slot->wait();
    if (!r.error) {
        // The assignment is durable before the members act on it.
        if (auto ec = co_await flush_group(group_id)) {
            r.error = ec;
        }
    }
    co_return r;
}

asio::awaitable<std::error_code> group_coordinator::heartbeat(api::heartbeat_request req) {
    co_return heartbeat_now(req);
}

asio::awaitable<api::leave_group_result> group_coordinator::leave_group(
    sluice::group_id group, std::vector<api::leave_member> members) {
    auto r = leave_group_now(group, members);
    co_await flush_group(std::move(group));
    co_return r;
}

asio::awaitable<api::consumer_heartbeat_result> group_coordinator::consumer_heartbeat(
    api::consumer_heartbeat_request req) {
    // Members are not persisted (they rejoin after a restart), so nothing here waits for an
    // fsync; a group epoch record written on the way is flushed with the next write.
    co_return consumer_heartbeat_now(req);
}

asio::awaitable<api::offset_commit_result> group_coordinator::commit_offsets(
    api::offset_commit_request req) {
    auto r = commit_offsets_now(req);
    bool wrote = false;
    for (const auto& t : r.topics) {
        for (const auto& p : t.partitions) {
            wrote = wrote || !p.error;
        }
    }
    if (wrote) {
        if (auto ec = co_await flush_group(req.group_id)) {
            for (auto& t : r.topics) {
                for (auto& p : t.partitions) {
                    if (!p.error) {
                        p.error = ec;
                    }
                }
            }
        }
    }
    co_return r;
}

asio::awaitable<std::vector<api::offset_fetch_result>> group_coordinator::fetch_offsets(
    std::vector<api::offset_fetch_request> reqs) {
    co_return fetch_offsets_now(reqs);
}

asio::awaitable<std::vector<api::group_deletion>> group_coordinator::delete_groups(
    std::vector<sluice::group_id> ids) {
    auto r = delete_groups_now(ids);
    for (auto& d : r) {
        if (!d.error) {
            d.error = co_await flush_group(d.group_id);
        }
    }
    co_return r;
}

asio::awaitable<api::offset_delete_result> group_coordinator::delete_offsets(
    sluice::group_id group, std::vector<api::topic_partition_list> topics) {
    auto r = delete_offsets_now(group, topics);
    if (!r.error) {
        if (auto ec = co_await flush_group(std::move(group))) {
            r.error = ec;
        }
    }
    co_return r;
}

asio::awaitable<std::vector<api::listed_group>> group_coordinator::list_groups(
    std::vector<std::string> states, std::vector<std::string> types) {
    co_return list_groups_now(states, types);
}

asio::awaitable<std::vector<api::described_group>> group_coordinator::describe_groups(
    std::vector<sluice::group_id> ids) {
    co_return describe_groups_now(ids);
}

asio::awaitable<std::vector<api::consumer_group_description>>
group_coordinator::describe_consumer_groups(std::vector<sluice::group_id> ids) {
    co_return describe_consumer_groups_now(ids);
}

api::group_counters group_coordinator::counters() const {
    return {rebalances_.load(std::memory_order_relaxed), commits_.load(std::memory_order_relaxed)};
}

// --- listing and describing ----------------------------------------------------------------------

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
    std::lock_guard lock(mu_);
    for (const auto& [id, e] : groups_) {
        api::listed_group g;
        g.group_id = sluice::group_id(id);
        if (e.kind == group_kind::classic) {
            if (!e.classic) {
                continue;
            }
            g.protocol_type = e.classic->protocol_type().value_or("");
            g.state = to_string(e.classic->state());
            g.type = "classic";
        } else {
            g.protocol_type = consumer_protocol_type;
            g.state = e.consumer->state();
            g.type = "consumer";
        }
        if (!states.empty() && !states.contains(lower(g.state))) {
            continue;
        }
        if (!types.empty() && !types.contains(g.type)) {
            continue;
        }
        out.push_back(std::move(g));
    }
    return out;
}

std::vector<api::described_group> group_coordinator::describe_groups_now(
    const std::vector<sluice::group_id>& ids) {
    std::vector<api::described_group> out;
    std::lock_guard lock(mu_);
    const auto loading = check_loaded();
    for (const auto& group : ids) {
        const std::string& id = group.value;
        api::described_group d;
        d.group_id = group;
        if (loading) {
            d.error = loading;
            out.push_back(std::move(d));
            continue;
        }
        auto* e = find_locked(id);
        if (e == nullptr || e->kind != group_kind::classic || !e->classic) {
            d.state = "Dead";
            d.error = make_error_code(errc::group_id_not_found);
            out.push_back(std::move(d));
            continue;
        }
        const auto& g = *e->classic;
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
        out.push_back(std::move(d));
    }
    return out;
}

std::vector<api::consumer_group_description> group_coordinator::describe_consumer_groups_now(
    const std::vector<sluice::group_id>& ids) {
    std::vector<api::consumer_group_description> out;
    std::lock_guard lock(mu_);
    const auto loading = check_loaded();
    for (const auto& group : ids) {
        const std::string& id = group.value;
        api::consumer_group_description d;
        d.group_id = group;
        if (loading) {
            d.error = loading;
            out.push_back(std::move(d));
            continue;
        }
        auto* e = find_locked(id);
        if (e == nullptr || e->kind != group_kind::consumer || !e->consumer) {
            d.error = make_error_code(errc::group_id_not_found);
            d.error_message = e == nullptr ? "Group " + id + " not found."
                                           : "Group " + id + " is not a consumer group.";
            d.state = "Dead";
            out.push_back(std::move(d));
            continue;
        }
        const auto& g = *e->consumer;
        d.state = g.state();
        d.group_epoch = g.group_epoch();
        d.assignment_epoch = g.assignment_epoch();
        d.assignor_name = g.preferred_assignor(cfg_.consumer_assignors.front());
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
        out.push_back(std::move(d));
    }
    return out;
}

// --- views (HTTP, metrics) -----------------------------------------------------------------------

namespace {

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

}  // namespace

std::optional<api::group_view> group_coordinator::view_group(const sluice::group_id& id) {
    auto views = build_views({id.value});
    if (views.empty()) {
        return std::nullopt;
    }
    return std::move(views.front());
}

std::vector<api::group_view> group_coordinator::view_groups() {
    std::vector<std::string> ids;
    {
        std::lock_guard lock(mu_);
        for (const auto& [id, _] : groups_) {
            ids.push_back(id);
        }
    }
    return build_views(ids);
}

std::vector<api::group_view> group_coordinator::build_views(const std::vector<std::string>& ids) {
    // Topic ids -> names for KIP-848 assignments (read before taking the lock).
    std::map<uuid, std::string> names;
    for (const auto& t : log_.list_topics()) {
        names[t.id] = t.name;
    }
    std::vector<api::group_view> out;
    {
        std::lock_guard lock(mu_);
        for (const auto& group_id : ids) {
            auto* e = find_locked(group_id);
            if (e == nullptr) {
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
                const bool readable = v.protocol_type == consumer_protocol_type &&
                                      (g.in(classic_state::stable) ||
                                       g.in(classic_state::preparing_rebalance));
                for (const auto& [mid, m] : g.members()) {
                    api::group_view::member vm;
                    vm.member_id = mid;
                    vm.instance_id = m.group_instance_id;
                    vm.client_id = m.client_id;
                    vm.client_host = m.client_host;
                    if (readable) {
                        if (auto a = parse_assignment(protocol::bytes_view(m.assignment.data(),
                                                                           m.assignment.size()))) {
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
    }
    // High watermarks outside the lock: the log takes its own locks.
    for (auto& v : out) {
        for (auto& vp : v.offsets) {
            if (auto part = log_.partition(vp.topic.value, vp.partition)) {
                vp.log_end = part->high_watermark();
                if (vp.committed.value >= 0) {
                    vp.lag = std::max<std::int64_t>(0, vp.log_end - vp.committed);
                }
            }
        }
    }
    return out;
}

}  // namespace sluice::backend::group
