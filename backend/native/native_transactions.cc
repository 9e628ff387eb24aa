#include "backend/native/native_transactions.h"

#include <map>

#include <re2/re2.h>

#include "backend/log/errc.h"
#include "backend/producer/errc.h"
#include "backend/producer/txn_records.h"

namespace sluice::backend::native {
namespace bp = backend::producer;

namespace {

api::producer_identity identity_of(const bp::producer_id_and_epoch& p) {
    return {producer_id(p.producer_id), producer_epoch(p.epoch)};
}

}  // namespace

native_transactions::native_transactions(log::log_manager& log, bp::producer_state_manager& states,
                                         bp::transaction_coordinator& txn,
                                         boost::asio::any_io_executor pool)
    : log_(log), states_(states), txn_(txn), pool_(std::move(pool)) {}

api::awaitable<api::backend_result<api::producer_identity>> native_transactions::init_producer_id(
    std::optional<transactional_id> txn_id, std::int32_t timeout_ms,
    api::producer_identity expected) {
    std::optional<std::string> id;
    if (txn_id) {
        id = txn_id->value;
    }
    auto got = co_await txn_.init_producer_id(std::move(id), timeout_ms, expected.id.value,
                                              expected.epoch.value);
    if (!got) {
        co_return fail(got.error());
    }
    co_return identity_of(*got);
}

api::awaitable<std::vector<api::backend_error>> native_transactions::add_partitions(
    transactional_id txn_id, api::producer_identity producer, std::vector<api::txn_partition> parts,
    bool verify_only) {
    std::vector<bp::topic_partition> tps;
    tps.reserve(parts.size());
    for (auto& p : parts) {
        tps.push_back({std::move(p.topic.value), p.partition.value});
    }
    auto codes = co_await txn_.add_partitions(std::move(txn_id.value), producer.id.value,
                                              producer.epoch.value, std::move(tps), verify_only);
    co_return std::vector<api::backend_error>(codes.begin(), codes.end());
}

api::awaitable<api::backend_result<void>> native_transactions::add_offsets(
    transactional_id txn_id, api::producer_identity producer, sluice::group_id group) {
    co_return api::to_result(co_await txn_.add_offsets(std::move(txn_id.value), producer.id.value,
                                                  producer.epoch.value, std::move(group.value)));
}

api::awaitable<api::backend_result<void>> native_transactions::txn_offset_commit(
    api::txn_offset_commit_request req) {
    std::vector<bp::txn_offset> offsets;
    offsets.reserve(req.offsets.size());
    for (auto& o : req.offsets) {
        offsets.push_back({std::move(o.topic.value), o.partition.value, o.committed.value,
                           o.leader_epoch, std::move(o.metadata)});
    }
    co_return api::to_result(co_await txn_.txn_offset_commit(
        std::move(req.txn_id.value), req.producer.id.value, req.producer.epoch.value,
        std::move(req.group_id.value), std::move(req.member_id), std::move(req.group_instance_id),
        req.generation_id, std::move(offsets), req.implicit));
}

api::awaitable<api::backend_result<api::producer_identity>> native_transactions::end_txn(
    transactional_id txn_id, api::producer_identity producer, bool commit, bool bump_epoch) {
    auto got = co_await txn_.end_txn(std::move(txn_id.value), producer.id.value,
                                     producer.epoch.value, commit, bump_epoch);
    if (!got) {
        co_return fail(got.error());
    }
    co_return identity_of(*got);
}

api::awaitable<std::vector<api::described_transaction>> native_transactions::describe(
    std::vector<transactional_id> ids) {
    std::vector<std::string> names;
    names.reserve(ids.size());
    for (auto& id : ids) {
        names.push_back(std::move(id.value));
    }
    std::vector<api::described_transaction> out;
    for (auto& d : txn_.describe(names)) {
        auto& o = out.emplace_back();
        o.txn_id = transactional_id(d.transactional_id);
        o.error = d.error;
        if (d.error) {
            continue;
        }
        o.state = bp::txn_state_name(d.state);
        o.timeout_ms = d.timeout_ms;
        o.start_ms = d.start_ms;
        o.producer = {producer_id(d.producer_id), producer_epoch(d.producer_epoch)};
        for (const auto& tp : d.partitions) {
            o.partitions.push_back({topic_name(tp.topic), partition_id(tp.partition)});
        }
    }
    co_return out;
}

api::awaitable<api::backend_result<api::listed_transactions>> native_transactions::list(
    api::transaction_filter filter) {
    api::listed_transactions out;
    std::vector<bp::txn_state> states;
    for (const auto& name : filter.states) {
        if (auto s = bp::parse_txn_state(name)) {
            states.push_back(*s);
        } else {
            out.unknown_states.push_back(name);
        }
    }
    if (!filter.states.empty() && states.empty()) {
        co_return out;  // only unknown states: nothing matches
    }
    std::vector<std::int64_t> pids;
    for (auto p : filter.producers) {
        pids.push_back(p.value);
    }
    // RE2 matches in time linear in the id, whatever the pattern; compiled here, outside the
    // coordinator's lock, once per call.
    std::optional<re2::RE2> pattern;
    std::function<bool(const std::string&)> id_filter;
    if (filter.id_pattern && !filter.id_pattern->empty()) {
        re2::RE2::Options opts;
        opts.set_log_errors(false);
        pattern.emplace(*filter.id_pattern, opts);
        if (!pattern->ok()) {
            co_return fail(api::errc::invalid_regular_expression);
        }
        id_filter = [&pattern](const std::string& id) { return re2::RE2::FullMatch(id, *pattern); };
    }
    for (auto& l : txn_.list(states, pids, filter.min_duration_ms, id_filter)) {
        out.transactions.push_back(
            {transactional_id(l.transactional_id), producer_id(l.producer_id),
             bp::txn_state_name(l.state)});
    }
    co_return out;
}

api::awaitable<api::backend_result<std::vector<api::active_producer>>> native_transactions::describe_producers(
    topic_name topic, partition_id partition) {
    auto log = log_.partition(topic.value, partition);
    if (!log) {
        co_return fail(log::errc::unknown_topic_or_partition);
    }
    auto t = co_await states_.wait_turn(log, pool_);
    if (!t) {
        co_return fail(t.error());
    }
    std::vector<api::active_producer> out;
    for (const auto& d : t->state().describe()) {
        auto& p = out.emplace_back();
        p.producer = {producer_id(d.producer_id), producer_epoch(d.epoch)};
        p.last_sequence = d.last_sequence;
        p.last_timestamp = d.last_timestamp;
        p.coordinator_epoch = d.coordinator_epoch;
        p.current_txn_start_offset = offset(d.current_txn_start_offset);
    }
    co_return out;
}

std::int16_t native_transactions::transaction_version() const {
    return txn_.settings().transaction_version;
}

}  // namespace sluice::backend::native
