// group_coordinator: lifecycle, the ticker, and the calls: each finds its group, locks it,
// hands it to classic_groups, consumer_groups or offset_store, and waits (awaitable forms)
// only once the group is released. Listing, describing and the views are in group_views.cc.
#include "backend/group/group_coordinator.h"

#include <chrono>

#include <boost/asio/this_coro.hpp>

#include "backend/group/completion.h"
#include "backend/group/errc.h"
#include "backend/log/log_manager.h"
#include "backend/logger.h"

namespace sluice::backend::group {
namespace asio = boost::asio;

namespace {

api::offset_commit_result commit_skeleton(const api::offset_commit_request& req,
                                          std::error_code ec) {
    api::offset_commit_result out;
    for (const auto& t : req.topics) {
        auto& tr = out.topics.emplace_back();
        tr.topic = t.topic;
        for (const auto& p : t.partitions) {
            tr.partitions.push_back({p.partition, ec});
        }
    }
    return out;
}

api::join_group_result join_error(std::error_code ec, std::string member_id) {
    api::join_group_result r;
    r.error = ec;
    r.member_id = std::move(member_id);
    return r;
}

api::sync_group_result sync_error(std::error_code ec) {
    api::sync_group_result r;
    r.error = ec;
    return r;
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

group_coordinator::~group_coordinator() {
    stop();
}

// --- lifecycle and timeouts ----------------------------------------------------------------------

void group_coordinator::load() {
    if (loaded()) {
        return;
    }
    const auto started = mono();
    std::size_t records = 0;
    // Replayed into entries nobody else sees yet: calls made meanwhile are answered at once
    // with coordinator_loading.
    auto groups = store_.replay(records);
    for (auto& [_, e] : groups) {
        classic_.restore(*e);
        consumer_.restore(*e);
    }
    const std::size_t count = groups.size();
    registry_.install(std::move(groups));
    if (cfg_.offsets_retention_check_interval_ms > 0) {
        ticker_.set_retention(mono() + cfg_.offsets_retention_check_interval_ms);
    }
    loaded_.store(true, std::memory_order_release);
    group_log().info("group coordinator loaded {} groups from {} records of {} in {} ms", count,
                     records, offsets_topic_name, mono() - started);
}

void group_coordinator::start(std::optional<asio::any_io_executor> ticker_executor,
                              bool synchronous) {
    if (ticker_executor) {
        ticker_.start(*ticker_executor, [this] { run_timers(); });
    }
    if (loaded()) {
        return;
    }
    if (synchronous) {
        load();
    } else {
        loader_ = std::thread([this] { load(); });
    }
}

void group_coordinator::stop() {
    if (stopping_.exchange(true)) {
        return;
    }
    ticker_.stop();
    // Every call that finds a group after this sees stopping_ under the group's lock, so no
    // JoinGroup or SyncGroup parks after its group was visited here.
    for (const auto& id : registry_.ids()) {
        if (auto g = registry_.find(id)) {
            g->timers.clear();
            classic_.answer_parked(*g);
        }
    }
    if (loader_.joinable()) {
        loader_.join();
    }
}

std::error_code group_coordinator::check_loaded() const {
    if (stopping_.load()) {
        return make_error_code(errc::coordinator_unavailable);
    }
    return loaded() ? std::error_code{} : make_error_code(errc::coordinator_loading);
}

void group_coordinator::run_timers() {
    if (stopping_.load()) {
        return;
    }
    const std::int64_t now = mono();
    auto due = ticker_.take_due(now);
    for (const auto& id : due.groups) {
        if (auto g = registry_.find(id)) {
            g->noted_deadline.reset();  // the ticker forgot it: tell it again on release
            g->timers.run_due(now);
        }
    }
    if (due.retention) {
        expire_offsets();
    }
    ticker_.rearm();
}

void group_coordinator::expire_offsets() {
    std::size_t expired = 0;
    for (const auto& id : registry_.ids()) {
        if (auto g = registry_.find(id)) {
            expired += store_.expire(*g);
        }
    }
    if (expired > 0) {
        group_log().info("expired {} committed offsets (offsets.retention.minutes)", expired);
    }
    if (cfg_.offsets_retention_check_interval_ms > 0) {
        ticker_.set_retention(mono() + cfg_.offsets_retention_check_interval_ms);
    }
}

api::group_counters group_coordinator::counters() const {
    return {rebalances_.load(std::memory_order_relaxed), store_.commits()};
}

// --- classic protocol
// ------------------------------------------------------------------------------

void group_coordinator::join_group(api::join_group_request req, join_callback done) {
    if (auto ec = check_loaded()) {
        done(join_error(ec, req.member_id));
        return;
    }
    if (req.group_id.value.empty()) {
        done(join_error(make_error_code(errc::invalid_group_id), req.member_id));
        return;
    }
    auto g = registry_.find_or_create(req.group_id.value);
    join_callback answer = g->defer(std::move(done));
    if (stopping_.load()) {
        answer(join_error(make_error_code(errc::coordinator_unavailable), req.member_id));
        return;
    }
    classic_.join(*g, std::move(req), std::move(answer));
}

void group_coordinator::sync_group(api::sync_group_request req, sync_callback done) {
    if (auto ec = check_loaded()) {
        done(sync_error(ec));
        return;
    }
    auto g = registry_.find(req.group_id.value);
    if (!g) {
        done(sync_error(make_error_code(errc::unknown_member_id)));
        return;
    }
    sync_callback answer = g->defer(std::move(done));
    if (stopping_.load()) {
        answer(sync_error(make_error_code(errc::coordinator_unavailable)));
        return;
    }
    classic_.sync(*g, std::move(req), std::move(answer));
}

std::error_code group_coordinator::heartbeat_now(const api::heartbeat_request& req) {
    if (auto ec = check_loaded()) {
        return ec;
    }
    auto g = registry_.find(req.group_id.value);
    if (!g) {
        return make_error_code(errc::unknown_member_id);
    }
    return classic_.heartbeat(*g, req);
}

api::leave_group_result group_coordinator::leave_group_now(
    const sluice::group_id& group, const std::vector<api::leave_member>& members) {
    api::leave_group_result out;
    if (auto ec = check_loaded()) {
        out.error = ec;
        return out;
    }
    auto g = registry_.find(group.value);
    if (!g) {
        out.error = make_error_code(errc::unknown_member_id);
        return out;
    }
    return classic_.leave(*g, members);
}

// --- KIP-848 protocol
// ------------------------------------------------------------------------------

api::consumer_heartbeat_result group_coordinator::consumer_heartbeat_now(
    const api::consumer_heartbeat_request& req) {
    if (auto ec = check_loaded()) {
        api::consumer_heartbeat_result r;
        r.error = ec;
        return r;
    }
    // The pattern is compiled here, before the group is locked.
    std::shared_ptr<const topic_regex> regex;
    if (auto invalid = consumer_.validate(req, regex)) {
        return std::move(*invalid);
    }
    auto g = registry_.find_or_create(req.group_id.value);
    return consumer_.heartbeat(*g, req, std::move(regex));
}

// --- offsets
// ---------------------------------------------------------------------------------------

std::error_code group_coordinator::validate_commit(group_entry& e,
                                                   const api::offset_commit_request& req,
                                                   bool transactional) {
    if (e.kind == group_kind::consumer && e.consumer) {
        return consumer_.validate_commit(e, req, transactional);
    }
    return classic_.validate_commit(e, req, transactional);
}

api::offset_commit_result group_coordinator::commit_offsets_now(
    const api::offset_commit_request& req) {
    if (auto ec = check_loaded()) {
        return commit_skeleton(req, ec);
    }
    if (req.group_id.value.empty()) {
        return commit_skeleton(req, make_error_code(errc::invalid_group_id));
    }
    auto g = registry_.find_or_create(req.group_id.value);
    if (auto ec = validate_commit(*g, req, false)) {
        group_log().debug("group {}: commit from member '{}' (generation/epoch {}) refused: {}",
                          req.group_id, req.member_id, req.generation_id_or_member_epoch,
                          ec.message());
        return commit_skeleton(req, ec);
    }
    return store_.commit(*g, req);
}

std::vector<api::offset_fetch_result> group_coordinator::fetch_offsets_now(
    const std::vector<api::offset_fetch_request>& reqs) {
    std::vector<api::offset_fetch_result> out;
    const auto loading = check_loaded();
    for (const auto& req : reqs) {
        api::offset_fetch_result r;
        r.group_id = req.group_id;
        if (loading) {
            r.error = loading;
            out.push_back(std::move(r));
            continue;
        }
        if (req.group_id.value.empty()) {
            r.error = make_error_code(errc::invalid_group_id);
            out.push_back(std::move(r));
            continue;
        }
        auto g = registry_.find(req.group_id.value);
        if (g) {
            if (auto ec = consumer_.validate_fetch(*g, req)) {
                r.error = ec;
                out.push_back(std::move(r));
                continue;
            }
        }
        out.push_back(store_.fetch(g ? &*g : nullptr, req));
    }
    mark_unstable(out, reqs);
    return out;
}

void group_coordinator::mark_unstable(std::vector<api::offset_fetch_result>& results,
                                      const std::vector<api::offset_fetch_request>& reqs) const {
    if (!pending_txn_offsets_) {
        return;
    }
    // Outside every group's lock: the predicate asks the transaction coordinator.
    for (std::size_t i = 0; i < results.size() && i < reqs.size(); ++i) {
        if (!reqs[i].require_stable || results[i].error) {
            continue;
        }
        for (auto& t : results[i].topics) {
            for (auto& p : t.partitions) {
                if (pending_txn_offsets_(reqs[i].group_id, t.topic, p.partition)) {
                    p = {p.partition, offset(-1), -1, std::string(),
                         make_error_code(errc::unstable_offset_commit)};
                }
            }
        }
    }
}

api::offset_delete_result group_coordinator::delete_offsets_now(
    const sluice::group_id& group, const std::vector<api::topic_partition_list>& topics) {
    api::offset_delete_result out;
    if (auto ec = check_loaded()) {
        out.error = ec;
        return out;
    }
    auto g = registry_.find(group.value);
    if (!g) {
        out.error = make_error_code(errc::group_id_not_found);
        return out;
    }
    return store_.delete_offsets(*g, topics);
}

std::vector<api::group_deletion> group_coordinator::delete_groups_now(
    const std::vector<sluice::group_id>& ids) {
    std::vector<api::group_deletion> out;
    const auto loading = check_loaded();
    for (const auto& group : ids) {
        if (loading) {
            out.push_back({group, loading});
            continue;
        }
        auto g = registry_.find(group.value);
        out.push_back(
            {group, g ? store_.delete_group(*g) : make_error_code(errc::group_id_not_found)});
    }
    return out;
}

std::error_code group_coordinator::validate_txn_commit(
    const sluice::group_id& group, const std::string& member_id,
    const std::optional<std::string>& group_instance_id, std::int32_t generation_id) {
    if (auto ec = check_loaded()) {
        return ec;
    }
    if (group.value.empty()) {
        return make_error_code(errc::invalid_group_id);
    }
    api::offset_commit_request req;
    req.group_id = group;
    req.member_id = member_id;
    req.group_instance_id = group_instance_id;
    req.generation_id_or_member_epoch = generation_id;
    auto g = registry_.find_or_create(group.value);
    return validate_commit(*g, req, true);
}

// --- awaitable forms -----------------------------------------------------------------------------

asio::awaitable<std::error_code> group_coordinator::flush_group(sluice::group_id group) {
    co_return co_await store_.flush(std::move(group.value));
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
    const sluice::group_id group = req.group_id;
    sync_group(std::move(req), [slot](api::sync_group_result r) { slot->set(std::move(r)); });
    auto r = co_await slot->wait();
    if (!r.error) {
        // The assignment is durable before the members act on it.
        if (auto ec = co_await flush_group(group)) {
            r.error = ec;
        }
    }
    co_return r;
}

asio::awaitable<api::backend_result<void>> group_coordinator::heartbeat(
    api::heartbeat_request req) {
    co_return api::to_result(heartbeat_now(req));
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

asio::awaitable<std::error_code> group_coordinator::commit_txn_offsets(
    sluice::group_id group, std::vector<api::commit_topic> topics) {
    std::error_code ec = check_loaded();
    if (!ec) {
        auto g = registry_.find_or_create(group.value);
        ec = store_.commit_txn(*g, topics);
    }
    if (ec) {
        co_return ec;
    }
    co_return co_await flush_group(std::move(group));
}

}  // namespace sluice::backend::group
