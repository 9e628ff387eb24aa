// transaction_coordinator: __transaction_state (creation, records, replay), producer id blocks,
// the completion of a transaction (markers, offsets) and the ticker.
#include <limits>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "backend/producer/errc.h"
#include "backend/producer/logger.h"
#include "backend/producer/producer_state_manager.h"
#include "backend/producer/transaction_coordinator.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch_builder.h"

namespace sluice::backend::producer {
namespace kafka = protocol::kafka;

namespace {

/// Decompressed size allowed per batch at replay (our batches are never compressed).
constexpr std::size_t max_replay_batch_bytes = 64 << 20;
/// Markers carry the coordinator epoch; a single node never changes coordinators.
constexpr std::int32_t coordinator_epoch = 0;

bool is_complete_state(txn_state s) {
    return s == txn_state::empty || s == txn_state::complete_commit ||
           s == txn_state::complete_abort;
}

std::uint32_t partition_hash(const std::string& id) {
    // compat: Kafka uses abs(transactionalId.hashCode) % partitions; any stable hash does here,
    // but it must never change once the topic exists.
    std::uint32_t h = 0;
    for (unsigned char c : id) {
        h = 31 * h + c;
    }
    return h & 0x7fffffff;
}

}  // namespace

std::shared_ptr<log::partition_log> transaction_coordinator::state_partition(const std::string& id,
                                                                             bool create) {
    auto info = log_.find_topic(transaction_state_topic);
    if (!info && create) {
        auto made = log_.create_internal_topic(
            transaction_state_topic, std::max(settings_.state_log_partitions, 1),
            {{"cleanup.policy", "compact"},
             {"segment.bytes", std::to_string(settings_.state_log_segment_bytes)}});
        if (!made) {
            txn_log().error("cannot create {}: {}", transaction_state_topic,
                            made.error().message());
            return nullptr;
        }
        txn_log().info("created internal topic {} with {} partitions", transaction_state_topic,
                       made->partitions);
        info = *made;
    }
    if (!info || info->partitions < 1) {
        return nullptr;
    }
    const auto p = static_cast<std::int32_t>(partition_hash(id) %
                                             static_cast<std::uint32_t>(info->partitions));
    return log_.partition(transaction_state_topic, partition_id(p));
}

namespace {
result<offset> append_record(log::partition_log& part, protocol::bytes_view key,
                             std::optional<protocol::bytes_view> value, std::int64_t now) {
    kafka::record_batch_builder builder;
    builder.add(key, value, now);
    auto batch = builder.finish();
    if (!batch) {
        return fail(errc::coordinator_not_available);
    }
    log::append_options opts;
    opts.now_ms = now;
    auto appended = part.append(batch->mutable_view(), opts);
    if (!appended) {
        txn_log().warn("appending to {}-{} failed: {}", part.topic(), part.partition().value,
                       appended.error().message());
        return fail(errc::coordinator_not_available);
    }
    return appended->last_offset + 1;
}
}  // namespace

result<transaction_coordinator::flush_target> transaction_coordinator::persist_locked(
    const std::string& id, const txn_metadata* md) {
    auto part = state_partition(id, true);
    if (!part) {
        return fail(errc::coordinator_not_available);
    }
    auto key = encode_txn_key(id);
    std::optional<protocol::byte_buffer> value;
    if (md != nullptr) {
        value = encode_txn_value(*md);
    }
    std::optional<protocol::bytes_view> v;
    if (value) {
        v = value->view();
    }
    auto end = append_record(*part, key.view(), v, now());
    if (!end) {
        return fail(end.error());
    }
    return flush_target{part, *end};
}

result<std::int64_t> transaction_coordinator::allocate_pid_locked(
    std::vector<flush_target>& flushes) {
    if (next_pid_ >= block_end_) {
        // A block is recorded before any id in it is handed out, so ids are never reused
        // after a crash (the rest of a block in use at the crash is skipped).
        auto part = state_partition("", true);
        if (!part) {
            return fail(errc::coordinator_not_available);
        }
        const std::int64_t end = next_pid_ + settings_.producer_id_block_size;
        auto key = encode_pid_block_key();
        auto value = encode_pid_block_value(end);
        auto at = append_record(*part, key.view(), value.view(), now());
        if (!at) {
            return fail(at.error());
        }
        flushes.push_back({part, *at});
        block_end_ = end;
    }
    return next_pid_++;
}

boost::asio::awaitable<std::error_code> transaction_coordinator::flush(
    std::vector<flush_target> targets) {
    for (auto& t : targets) {
        auto r = co_await t.log->flush_to(t.end);
        if (!r) {
            txn_log().warn("flushing {}-{} failed: {}", t.log->topic(), t.log->partition().value,
                           r.error().message());
            co_return make_error_code(errc::coordinator_not_available);
        }
    }
    co_return std::error_code{};
}

result<void> transaction_coordinator::load() {
    std::size_t records = 0;
    std::int64_t max_pid = -1;
    std::lock_guard lock(mu_);
    for (const auto& part : log_.partitions(transaction_state_topic)) {
        auto replayed = part->replay(part->log_start_offset(), [&](protocol::bytes_view batch) {
            auto decoded = kafka::decode_batch(batch, max_replay_batch_bytes);
            if (!decoded) {
                txn_log().warn("{}-{}: skipping an undecodable batch", transaction_state_topic,
                               part->partition().value);
                return true;
            }
            if (decoded->header.is_control()) {
                return true;
            }
            for (const auto& rec : decoded->records) {
                if (!rec.key) {
                    continue;
                }
                auto key = decode_txn_record_key(*rec.key);
                if (!key) {
                    continue;
                }
                ++records;
                if (std::holds_alternative<pid_block_key>(*key)) {
                    if (rec.value) {
                        if (auto end = decode_pid_block_value(*rec.value)) {
                            block_end_ = std::max(block_end_, *end);
                        }
                    }
                    continue;
                }
                const auto& id = std::get<txn_key>(*key).transactional_id;
                if (!rec.value) {
                    txns_.erase(id);
                    continue;
                }
                auto md = decode_txn_value(*rec.value);
                if (!md) {
                    txn_log().warn("skipping an undecodable record of transactional id '{}'", id);
                    continue;
                }
                max_pid = std::max({max_pid, md->producer_id, md->last_producer_id,
                                    md->next_producer_id});
                txns_[id].md = std::move(*md);
            }
            return true;
        });
        if (!replayed) {
            txn_log().error("cannot replay {}-{}: {}", transaction_state_topic,
                            part->partition().value, replayed.error().message());
            return fail(errc::storage_error);
        }
    }
    // Whatever was left of the last block may have been handed out: start after it.
    next_pid_ = std::max(block_end_, max_pid + 1);
    block_end_ = next_pid_;
    loaded_ = true;
    if (records > 0) {
        txn_log().info("loaded {} transactional ids from {} ({} records)", txns_.size(),
                       transaction_state_topic, records);
    }
    return {};
}

boost::asio::awaitable<void> transaction_coordinator::recover() {
    std::vector<std::string> unfinished;
    {
        std::lock_guard lock(mu_);
        for (auto& [id, e] : txns_) {
            if (e.md.state == txn_state::prepare_commit || e.md.state == txn_state::prepare_abort) {
                e.pending = true;
                unfinished.push_back(id);
            }
        }
    }
    for (const auto& id : unfinished) {
        txn_log().info("transactional id '{}': completing the transaction a restart interrupted",
                       id);
        if (auto ec = co_await complete(id)) {
            txn_log().warn("transactional id '{}': completion deferred: {}", id, ec.message());
        }
    }
}

boost::asio::awaitable<std::error_code> transaction_coordinator::fence_and_abort(std::string id) {
    std::vector<flush_target> flushes;
    {
        std::lock_guard lock(mu_);
        auto it = txns_.find(id);
        if (it == txns_.end() || it->second.pending ||
            it->second.md.state != txn_state::ongoing) {
            co_return make_error_code(errc::concurrent_transactions);
        }
        // compat: TransactionMetadata.prepareFenceProducerEpoch, then PrepareAbort with the
        // bumped epoch: the old producer is fenced and its transaction aborted.
        txn_metadata next = it->second.md;
        if (next.producer_epoch < std::numeric_limits<std::int16_t>::max()) {
            next.producer_epoch = static_cast<std::int16_t>(next.producer_epoch + 1);
        }
        next.last_producer_epoch = -1;
        next.state = txn_state::prepare_abort;
        next.last_update_ms = now();
        auto w = persist_locked(id, &next);
        if (!w) {
            co_return w.error();
        }
        flushes.push_back(*w);
        it->second.md = std::move(next);
        it->second.pending = true;
    }
    if (auto ec = co_await flush(std::move(flushes))) {
        std::lock_guard lock(mu_);
        if (auto it = txns_.find(id); it != txns_.end()) {
            it->second.pending = false;
        }
        co_return ec;
    }
    co_return co_await complete(id);
}

boost::asio::awaitable<std::error_code> transaction_coordinator::complete(std::string id) {
    std::int64_t pid = -1;
    std::int16_t epoch = -1;
    bool commit = false;
    std::vector<topic_partition> partitions;
    std::map<std::string, std::map<topic_partition, pending_offset>> groups;
    {
        std::lock_guard lock(mu_);
        auto it = txns_.find(id);
        if (it == txns_.end()) {
            co_return std::error_code{};
        }
        const auto& md = it->second.md;
        if (md.state != txn_state::prepare_commit && md.state != txn_state::prepare_abort) {
            it->second.pending = false;
            co_return std::error_code{};
        }
        it->second.pending = true;
        pid = md.producer_id;
        epoch = md.producer_epoch;
        commit = md.state == txn_state::prepare_commit;
        partitions.assign(md.partitions.begin(), md.partitions.end());
        if (commit) {
            groups = md.groups;
        }
    }
    auto give_up = [&](std::error_code ec) {
        std::lock_guard lock(mu_);
        if (auto it = txns_.find(id); it != txns_.end()) {
            it->second.pending = false;  // the ticker tries again
        }
        return ec;
    };
    // 1. A marker in every partition of the transaction, each checked against and applied to
    // the partition's producer state.
    const auto type = commit ? kafka::control_record_type::commit : kafka::control_record_type::abort;
    std::vector<flush_target> flushes;
    for (const auto& tp : partitions) {
        auto part = log_.partition(tp.topic, partition_id(tp.partition));
        if (!part) {
            txn_log().warn("transactional id '{}': partition {}-{} is gone; no marker written", id,
                           tp.topic, tp.partition);
            continue;
        }
        auto st = states_.state_for(part);
        if (!st) {
            co_return give_up(st.error());
        }
        const std::int64_t t = now();
        auto batch = kafka::build_control_batch(type, pid, epoch, coordinator_epoch, t);
        if (!batch) {
            co_return give_up(make_error_code(errc::storage_error));
        }
        append_guard guard(**st, kafka::end_txn_marker{type, coordinator_epoch});
        log::append_options opts;
        opts.now_ms = t;
        opts.validator = &guard;
        opts.allow_control_batches = true;
        auto appended = part->append(batch->mutable_view(), opts);
        if (!appended) {
            if (appended.error() == make_error_code(errc::invalid_producer_epoch)) {
                // The partition saw a newer epoch of this producer: a later transaction, so this
                // one was already ended there.
                txn_log().warn("transactional id '{}': {}-{} has a newer producer epoch; marker "
                               "skipped", id, tp.topic, tp.partition);
                continue;
            }
            txn_log().warn("transactional id '{}': writing the {} marker to {}-{} failed: {}", id,
                           commit ? "commit" : "abort", tp.topic, tp.partition,
                           appended.error().message());
            co_return give_up(make_error_code(errc::coordinator_not_available));
        }
        flushes.push_back({part, appended->last_offset + 1});
    }
    if (auto ec = co_await flush(std::move(flushes))) {
        co_return give_up(ec);
    }
    // 2. The offsets of a committed transaction.
    for (auto& [group, offsets] : groups) {
        if (offsets.empty()) {
            continue;
        }
        if (store_ == nullptr) {
            txn_log().warn("transactional id '{}': no group coordinator; offsets of group '{}' "
                           "dropped", id, group);
            continue;
        }
        std::vector<txn_offset> list;
        for (auto& [tp, o] : offsets) {
            list.push_back({tp.topic, tp.partition, o.offset, o.leader_epoch, o.metadata});
        }
        if (auto ec = co_await store_->commit(group, std::move(list))) {
            txn_log().warn("transactional id '{}': committing offsets of group '{}' failed: {}",
                           id, group, ec.message());
            co_return give_up(make_error_code(errc::coordinator_not_available));
        }
    }
    // 3. Complete.
    std::vector<flush_target> done;
    {
        std::lock_guard lock(mu_);
        auto it = txns_.find(id);
        if (it == txns_.end()) {
            co_return std::error_code{};
        }
        txn_metadata next = it->second.md;
        next.state = commit ? txn_state::complete_commit : txn_state::complete_abort;
        next.partitions.clear();
        next.groups.clear();
        next.last_update_ms = now();
        if (next.next_producer_id >= 0) {
            // KIP-890: the epoch overflowed; the next transaction uses a fresh id.
            next.last_producer_id = next.producer_id;
            next.producer_id = next.next_producer_id;
            next.next_producer_id = -1;
            next.producer_epoch = 0;
        }
        auto w = persist_locked(id, &next);
        if (!w) {
            it->second.pending = false;
            co_return w.error();
        }
        done.push_back(*w);
        it->second.md = std::move(next);
        it->second.pending = false;
    }
    co_return co_await flush(std::move(done));
}

boost::asio::awaitable<void> transaction_coordinator::run_timers() {
    std::vector<std::string> timed_out;
    std::vector<std::string> unfinished;
    std::vector<flush_target> flushes;
    const std::int64_t t = now();
    {
        std::lock_guard lock(mu_);
        if (!loaded_) {
            co_return;
        }
        const bool expire = t - last_expiry_ms_ >= settings_.expiry_check_interval_ms;
        if (expire) {
            last_expiry_ms_ = t;
        }
        for (auto it = txns_.begin(); it != txns_.end();) {
            auto& [id, e] = *it;
            if (e.pending) {
                ++it;
                continue;
            }
            const auto& md = e.md;
            if (md.state == txn_state::ongoing && md.start_ms >= 0 &&
                md.start_ms + md.timeout_ms < t) {
                timed_out.push_back(id);
            } else if (md.state == txn_state::prepare_commit ||
                       md.state == txn_state::prepare_abort) {
                unfinished.push_back(id);
            } else if (expire && is_complete_state(md.state) &&
                       t - md.last_update_ms >= settings_.id_expiration_ms) {
                // compat: transactional.id.expiration.ms: forget ids idle that long.
                if (auto w = persist_locked(id, nullptr)) {
                    flushes.push_back(*w);
                    txn_log().info("transactional id '{}' expired", id);
                    it = txns_.erase(it);
                    continue;
                }
            }
            ++it;
        }
    }
    (void)co_await flush(std::move(flushes));
    for (const auto& id : timed_out) {
        txn_log().info("transactional id '{}': transaction timed out; aborting", id);
        if (auto ec = co_await fence_and_abort(id)) {
            txn_log().debug("transactional id '{}': timeout abort not done: {}", id, ec.message());
        }
    }
    for (const auto& id : unfinished) {
        if (auto ec = co_await complete(id)) {
            txn_log().warn("transactional id '{}': completion deferred again: {}", id,
                           ec.message());
        }
    }
}

void transaction_coordinator::start(boost::asio::any_io_executor ex) {
    last_expiry_ms_ = now();
    ticker_ = std::make_unique<boost::asio::steady_timer>(ex);
    boost::asio::co_spawn(ex, ticker_loop(), boost::asio::detached);
}

void transaction_coordinator::stop() {
    stopping_ = true;
    if (ticker_) {
        // Cancelled from the server's thread: post the cancel to the timer's executor.
        auto* t = ticker_.get();
        boost::asio::post(t->get_executor(), [t] { t->cancel(); });
    }
}

boost::asio::awaitable<void> transaction_coordinator::ticker_loop() {
    while (!stopping_) {
        // At most a second between rounds: completions deferred at start (the group
        // coordinator still loading) are retried soon; timeouts still fire on their own clock.
        ticker_->expires_after(std::chrono::milliseconds(
            std::clamp<std::int64_t>(settings_.abort_check_interval_ms, 100, 1000)));
        boost::system::error_code ec;
        co_await ticker_->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        if (stopping_) {
            break;
        }
        co_await run_timers();
    }
}

}  // namespace sluice::backend::producer
