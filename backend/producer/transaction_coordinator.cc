// transaction_coordinator: the Kafka APIs (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
// TxnOffsetCommit, EndTxn), the produce-path verification and the views. Storage (replay,
// records), completion (markers) and timers are in transaction_coordinator_store.cc.
#include "backend/producer/transaction_coordinator.h"

#include <algorithm>
#include <limits>

#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "backend/producer/errc.h"
#include "backend/producer/logger.h"

namespace sluice::backend::producer {

namespace {

/// compat: TransactionMetadata.isEpochExhausted.
bool epoch_exhausted(std::int16_t epoch) {
    return epoch >= std::numeric_limits<std::int16_t>::max() - 1;
}

bool is_complete(txn_state s) {
    return s == txn_state::empty || s == txn_state::complete_commit ||
           s == txn_state::complete_abort;
}

}  // namespace

txn_clock txn_clock::system() {
    return {[] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    }};
}

transaction_coordinator::transaction_coordinator(log::log_manager& log,
                                                 producer_state_manager& states,
                                                 txn_settings settings, txn_clock clock)
    : log_(log), states_(states), settings_(settings), clock_(std::move(clock)) {}

transaction_coordinator::~transaction_coordinator() { stop(); }

boost::asio::awaitable<result<producer_id_and_epoch>> transaction_coordinator::init_producer_id(
    std::optional<std::string> transactional_id, std::int32_t timeout_ms,
    std::int64_t expected_producer_id, std::int16_t expected_epoch) {
    if (!loaded_) {
        co_return fail(errc::coordinator_loading);
    }
    if (!transactional_id) {
        // compat: TransactionCoordinator.handleInitProducerId: without a transactional id the
        // request's id and epoch are ignored and a new id is handed out.
        std::vector<flush_target> flushes;
        std::int64_t pid = -1;
        {
            std::lock_guard lock(mu_);
            auto got = allocate_pid_locked(flushes);
            if (!got) {
                co_return fail(got.error());
            }
            pid = *got;
        }
        if (auto ec = co_await flush(std::move(flushes))) {
            co_return fail(ec);
        }
        co_return producer_id_and_epoch{pid, 0};
    }
    const std::string id = *transactional_id;
    if (id.empty()) {
        co_return fail(errc::invalid_request);
    }
    if (timeout_ms <= 0 || timeout_ms > settings_.max_timeout_ms) {
        co_return fail(errc::invalid_transaction_timeout);
    }
    const bool expected = expected_producer_id != -1 || expected_epoch != -1;
    for (int round = 0;; ++round) {
        std::vector<flush_target> flushes;
        bool must_fence = false;
        producer_id_and_epoch out;
        {
            std::lock_guard lock(mu_);
            auto it = txns_.find(id);
            if (it == txns_.end()) {
                auto pid = allocate_pid_locked(flushes);
                if (!pid) {
                    co_return fail(pid.error());
                }
                entry e;
                e.md.producer_id = *pid;
                e.md.timeout_ms = timeout_ms;
                e.md.last_update_ms = now();
                it = txns_.emplace(id, std::move(e)).first;
            }
            entry& e = it->second;
            txn_metadata& md = e.md;
            if (e.pending) {
                co_return fail(errc::concurrent_transactions);
            }
            // compat: TransactionCoordinator.isValidProducerId.
            if (expected && !(md.producer_epoch == -1 || expected_producer_id == md.producer_id ||
                              (expected_producer_id == md.last_producer_id &&
                               epoch_exhausted(expected_epoch)))) {
                co_return fail(errc::producer_fenced);
            }
            switch (md.state) {
                case txn_state::prepare_commit:
                case txn_state::prepare_abort:
                case txn_state::prepare_epoch_fence:
                case txn_state::dead:
                    co_return fail(errc::concurrent_transactions);
                case txn_state::ongoing:
                    must_fence = true;
                    break;
                case txn_state::empty:
                case txn_state::complete_commit:
                case txn_state::complete_abort: {
                    txn_metadata next = md;
                    if (epoch_exhausted(md.producer_epoch) &&
                        (!expected || expected_epoch == md.producer_epoch)) {
                        auto pid = allocate_pid_locked(flushes);
                        if (!pid) {
                            co_return fail(pid.error());
                        }
                        next.last_producer_id = md.producer_id;
                        next.producer_id = *pid;
                        next.last_producer_epoch = expected ? md.producer_epoch : -1;
                        next.producer_epoch = 0;
                    } else if (!expected || md.producer_epoch == -1 ||
                               expected_epoch == md.producer_epoch) {
                        // compat: TransactionMetadata.prepareIncrementProducerEpoch.
                        next.last_producer_epoch = expected ? md.producer_epoch : -1;
                        next.producer_epoch = static_cast<std::int16_t>(md.producer_epoch + 1);
                    } else if (expected_epoch == md.last_producer_epoch) {
                        // A retry of a call that succeeded: same answer, no bump.
                    } else {
                        co_return fail(errc::producer_fenced);
                    }
                    next.state = txn_state::empty;
                    next.timeout_ms = timeout_ms;
                    next.partitions.clear();
                    next.groups.clear();
                    next.start_ms = -1;
                    next.next_producer_id = -1;
                    next.tv2 = false;
                    next.last_update_ms = now();
                    auto w = persist_locked(id, &next);
                    if (!w) {
                        co_return fail(w.error());
                    }
                    flushes.push_back(*w);
                    md = next;
                    out = {md.producer_id, md.producer_epoch};
                    break;
                }
            }
        }
        if (must_fence) {
            if (round > 0) {
                co_return fail(errc::concurrent_transactions);
            }
            if (auto ec = co_await flush(std::move(flushes))) {
                co_return fail(ec);
            }
            if (auto ec = co_await fence_and_abort(id)) {
                co_return fail(ec);
            }
            continue;  // the transaction is aborted: bump the epoch again for the caller
        }
        if (auto ec = co_await flush(std::move(flushes))) {
            co_return fail(ec);
        }
        txn_log().info("transactional id '{}': producer id {} epoch {}", id, out.producer_id,
                       out.epoch);
        co_return out;
    }
}

std::error_code transaction_coordinator::check_owner_locked(const std::string& id,
                                                            std::int64_t producer_id,
                                                            std::int16_t epoch, entry** out) {
    if (!loaded_) {
        return make_error_code(errc::coordinator_loading);
    }
    if (id.empty()) {
        return make_error_code(errc::invalid_request);
    }
    auto it = txns_.find(id);
    if (it == txns_.end() || it->second.md.producer_id != producer_id) {
        return make_error_code(errc::invalid_producer_id_mapping);
    }
    if (it->second.md.producer_epoch != epoch) {
        return make_error_code(errc::producer_fenced);
    }
    if (it->second.pending || it->second.md.state == txn_state::prepare_commit ||
        it->second.md.state == txn_state::prepare_abort) {
        return make_error_code(errc::concurrent_transactions);
    }
    *out = &it->second;
    return {};
}

boost::asio::awaitable<std::vector<std::error_code>> transaction_coordinator::add_partitions(
    std::string id, std::int64_t producer_id, std::int16_t epoch,
    std::vector<topic_partition> partitions, bool verify_only) {
    std::vector<std::error_code> out(partitions.size());
    std::vector<flush_target> flushes;
    {
        std::lock_guard lock(mu_);
        entry* e = nullptr;
        if (auto ec = check_owner_locked(id, producer_id, epoch, &e)) {
            std::fill(out.begin(), out.end(), ec);
            co_return out;
        }
        txn_metadata& md = e->md;
        if (verify_only) {
            for (std::size_t i = 0; i < partitions.size(); ++i) {
                if (md.partitions.count(partitions[i]) == 0) {
                    out[i] = make_error_code(errc::transaction_abortable);
                }
            }
            co_return out;
        }
        const bool subset = std::all_of(partitions.begin(), partitions.end(), [&](const auto& tp) {
            return md.partitions.count(tp) > 0;
        });
        if (md.state == txn_state::ongoing && subset) {
            co_return out;
        }
        txn_metadata next = md;
        if (is_complete(md.state)) {
            next.start_ms = now();
        }
        next.state = txn_state::ongoing;
        next.partitions.insert(partitions.begin(), partitions.end());
        next.last_update_ms = now();
        auto w = persist_locked(id, &next);
        if (!w) {
            std::fill(out.begin(), out.end(), w.error());
            co_return out;
        }
        flushes.push_back(*w);
        md = std::move(next);
    }
    if (auto ec = co_await flush(std::move(flushes))) {
        std::fill(out.begin(), out.end(), ec);
    }
    co_return out;
}

boost::asio::awaitable<std::error_code> transaction_coordinator::add_offsets(
    std::string id, std::int64_t producer_id, std::int16_t epoch, std::string group_id) {
    std::vector<flush_target> flushes;
    {
        std::lock_guard lock(mu_);
        entry* e = nullptr;
        if (auto ec = check_owner_locked(id, producer_id, epoch, &e)) {
            co_return ec;
        }
        txn_metadata& md = e->md;
        if (md.state == txn_state::ongoing && md.groups.count(group_id) > 0) {
            co_return std::error_code{};
        }
        txn_metadata next = md;
        if (is_complete(md.state)) {
            next.start_ms = now();
        }
        next.state = txn_state::ongoing;
        next.groups[group_id];
        next.last_update_ms = now();
        auto w = persist_locked(id, &next);
        if (!w) {
            co_return w.error();
        }
        flushes.push_back(*w);
        md = std::move(next);
    }
    co_return co_await flush(std::move(flushes));
}

boost::asio::awaitable<std::error_code> transaction_coordinator::txn_offset_commit(
    std::string id, std::int64_t producer_id, std::int16_t epoch, std::string group_id,
    std::string member_id, std::optional<std::string> group_instance_id,
    std::int32_t generation_id, std::vector<txn_offset> offsets, bool implicit) {
    if (store_ != nullptr) {
        if (auto ec = store_->validate(group_id, member_id, group_instance_id, generation_id)) {
            co_return ec;
        }
    }
    std::vector<flush_target> flushes;
    {
        std::lock_guard lock(mu_);
        entry* e = nullptr;
        if (auto ec = check_owner_locked(id, producer_id, epoch, &e)) {
            co_return ec;
        }
        txn_metadata& md = e->md;
        const bool added = md.state == txn_state::ongoing && md.groups.count(group_id) > 0;
        if (!added && !implicit) {
            // The group's offsets were not added to the transaction (AddOffsetsToTxn).
            co_return make_error_code(errc::transaction_abortable);
        }
        txn_metadata next = md;
        if (is_complete(md.state)) {
            next.start_ms = now();
        }
        if (implicit) {
            next.tv2 = true;
        }
        next.state = txn_state::ongoing;
        auto& pending = next.groups[group_id];
        for (auto& o : offsets) {
            pending[{o.topic, o.partition}] = {o.offset, o.leader_epoch, std::move(o.metadata)};
        }
        next.last_update_ms = now();
        auto w = persist_locked(id, &next);
        if (!w) {
            co_return w.error();
        }
        flushes.push_back(*w);
        md = std::move(next);
    }
    co_return co_await flush(std::move(flushes));
}

boost::asio::awaitable<result<producer_id_and_epoch>> transaction_coordinator::end_txn(
    std::string id, std::int64_t producer_id, std::int16_t epoch, bool commit, bool tv2) {
    if (!loaded_) {
        co_return fail(errc::coordinator_loading);
    }
    if (id.empty()) {
        co_return fail(errc::invalid_request);
    }
    std::vector<flush_target> flushes;
    bool complete_now = false;
    producer_id_and_epoch out;
    {
        std::lock_guard lock(mu_);
        auto it = txns_.find(id);
        if (it == txns_.end()) {
            co_return fail(errc::invalid_producer_id_mapping);
        }
        entry& e = it->second;
        txn_metadata& md = e.md;
        const txn_state done = commit ? txn_state::complete_commit : txn_state::complete_abort;
        // KIP-890: a retry of an EndTxn v5 that bumped the epoch (or rotated the id) carries the
        // previous id/epoch; it gets the same answer.
        const bool retry = tv2 && md.state == done && md.last_producer_epoch >= 0 &&
                           epoch == md.last_producer_epoch &&
                           (producer_id == md.producer_id || producer_id == md.last_producer_id);
        if (retry) {
            co_return producer_id_and_epoch{md.producer_id, md.producer_epoch};
        }
        if (md.producer_id != producer_id) {
            co_return fail(errc::invalid_producer_id_mapping);
        }
        if (epoch != md.producer_epoch) {
            co_return fail(errc::producer_fenced);
        }
        if (e.pending) {
            co_return fail(errc::concurrent_transactions);
        }
        txn_metadata next = md;
        next.last_update_ms = now();
        switch (md.state) {
            case txn_state::ongoing: {
                next.state = commit ? txn_state::prepare_commit : txn_state::prepare_abort;
                if (tv2) {
                    // KIP-890: every transaction ends with an epoch bump; the markers carry it.
                    next.tv2 = true;
                    next.last_producer_epoch = md.producer_epoch;
                    next.producer_epoch = static_cast<std::int16_t>(md.producer_epoch + 1);
                    if (epoch_exhausted(next.producer_epoch)) {
                        auto pid = allocate_pid_locked(flushes);
                        if (!pid) {
                            co_return fail(pid.error());
                        }
                        next.next_producer_id = *pid;
                    }
                }
                complete_now = true;
                break;
            }
            case txn_state::complete_commit:
            case txn_state::complete_abort:
            case txn_state::empty: {
                if (md.state == done && !tv2) {
                    co_return producer_id_and_epoch{md.producer_id, md.producer_epoch};
                }
                if (!(tv2 && !commit)) {
                    co_return fail(errc::invalid_txn_state);
                }
                // KIP-890: aborting an empty transaction succeeds and bumps the epoch.
                next.state = txn_state::complete_abort;
                next.last_producer_epoch = md.producer_epoch;
                next.tv2 = true;
                if (epoch_exhausted(static_cast<std::int16_t>(md.producer_epoch + 1))) {
                    auto pid = allocate_pid_locked(flushes);
                    if (!pid) {
                        co_return fail(pid.error());
                    }
                    next.last_producer_id = md.producer_id;
                    next.producer_id = *pid;
                    next.producer_epoch = 0;
                } else {
                    next.producer_epoch = static_cast<std::int16_t>(md.producer_epoch + 1);
                }
                break;
            }
            case txn_state::prepare_commit:
            case txn_state::prepare_abort:
                if ((md.state == txn_state::prepare_commit) == commit) {
                    co_return fail(errc::concurrent_transactions);
                }
                co_return fail(errc::invalid_txn_state);
            case txn_state::dead:
            case txn_state::prepare_epoch_fence:
                co_return fail(errc::invalid_txn_state);
        }
        auto w = persist_locked(id, &next);
        if (!w) {
            co_return fail(w.error());
        }
        flushes.push_back(*w);
        md = std::move(next);
        e.pending = complete_now;
        out = {md.producer_id, md.producer_epoch};
    }
    if (auto ec = co_await flush(std::move(flushes))) {
        std::lock_guard lock(mu_);
        if (auto it = txns_.find(id); it != txns_.end()) {
            it->second.pending = false;  // the ticker retries the completion
        }
        co_return fail(ec);
    }
    if (complete_now) {
        // The decision is durable: the transaction completes even if writing a marker fails
        // now (the ticker retries), so the client is told it succeeded.
        if (auto ec = co_await complete(id)) {
            txn_log().warn("transactional id '{}': completion deferred: {}", id, ec.message());
        }
        std::lock_guard lock(mu_);
        if (auto it = txns_.find(id); it != txns_.end()) {
            out = {it->second.md.producer_id, it->second.md.producer_epoch};
        }
    }
    txn_log().debug("transactional id '{}': {} (producer id {} epoch {})", id,
                    commit ? "committed" : "aborted", out.producer_id, out.epoch);
    co_return out;
}

std::error_code transaction_coordinator::verify_for_produce(
    const std::string& id, std::int64_t producer_id, std::int16_t epoch,
    const topic_partition& tp, bool implicit, const std::function<void()>& append,
    std::shared_ptr<log::partition_log>* txn_log_part, offset* txn_log_end) {
    std::lock_guard lock(mu_);
    entry* e = nullptr;
    if (auto ec = check_owner_locked(id, producer_id, epoch, &e)) {
        return ec;
    }
    txn_metadata& md = e->md;
    if (md.state != txn_state::ongoing || md.partitions.count(tp) == 0) {
        if (!implicit) {
            return make_error_code(errc::transaction_abortable);
        }
        // KIP-890: Produce v12 adds the partition; the record is appended before the data so
        // that a restart never finds data of a transaction that does not name its partition.
        txn_metadata next = md;
        if (is_complete(md.state)) {
            next.start_ms = now();
        }
        next.state = txn_state::ongoing;
        next.tv2 = true;
        next.partitions.insert(tp);
        next.last_update_ms = now();
        auto w = persist_locked(id, &next);
        if (!w) {
            return w.error();
        }
        md = std::move(next);
        if (txn_log_part != nullptr) {
            *txn_log_part = w->log;
        }
        if (txn_log_end != nullptr) {
            *txn_log_end = w->end;
        }
    }
    append();
    return {};
}

std::vector<described_transaction> transaction_coordinator::describe(
    const std::vector<std::string>& ids) {
    std::vector<described_transaction> out;
    std::lock_guard lock(mu_);
    for (const auto& id : ids) {
        described_transaction d;
        d.transactional_id = id;
        if (!loaded_) {
            d.error = make_error_code(errc::coordinator_loading);
        } else if (id.empty()) {
            d.error = make_error_code(errc::invalid_request);
        } else if (auto it = txns_.find(id);
                   it == txns_.end() || it->second.md.state == txn_state::dead) {
            d.error = make_error_code(errc::transactional_id_not_found);
        } else {
            const auto& md = it->second.md;
            d.state = md.state;
            d.timeout_ms = md.timeout_ms;
            d.start_ms = md.start_ms;
            d.producer_id = md.producer_id;
            d.producer_epoch = md.producer_epoch;
            d.partitions.assign(md.partitions.begin(), md.partitions.end());
        }
        out.push_back(std::move(d));
    }
    return out;
}

std::vector<listed_transaction> transaction_coordinator::list(
    const std::vector<txn_state>& states, const std::vector<std::int64_t>& producer_ids,
    std::int64_t min_duration_ms, const std::function<bool(const std::string&)>& id_filter) {
    std::vector<listed_transaction> out;
    std::lock_guard lock(mu_);
    const std::int64_t t = now();
    for (const auto& [id, e] : txns_) {
        const auto& md = e.md;
        if (md.state == txn_state::dead) {
            continue;
        }
        if (!states.empty() && std::find(states.begin(), states.end(), md.state) == states.end()) {
            continue;
        }
        if (!producer_ids.empty() && std::find(producer_ids.begin(), producer_ids.end(),
                                               md.producer_id) == producer_ids.end()) {
            continue;
        }
        // compat: KIP-994: only transactions running at least that long (ongoing ones).
        if (min_duration_ms >= 0 &&
            (md.state != txn_state::ongoing || md.start_ms < 0 || t - md.start_ms < min_duration_ms)) {
            continue;
        }
        if (id_filter && !id_filter(id)) {
            continue;
        }
        out.push_back({id, md.producer_id, md.state});
    }
    return out;
}

bool transaction_coordinator::has_pending_offsets(const std::string& group_id,
                                                  const std::string& topic,
                                                  std::int32_t partition) const {
    std::lock_guard lock(mu_);
    for (const auto& [id, e] : txns_) {
        if (e.md.state == txn_state::ongoing || e.md.state == txn_state::prepare_commit) {
            auto g = e.md.groups.find(group_id);
            if (g != e.md.groups.end() && g->second.count({topic, partition}) > 0) {
                return true;
            }
        }
    }
    return false;
}

}  // namespace sluice::backend::producer
