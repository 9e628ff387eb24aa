// The transaction coordinator and producer id allocator (owned by backend/producer): hands out
// producer ids and epochs (InitProducerId), tracks every transactional id's transaction
// (AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, timeouts), writes the commit
// and abort markers into the transaction's partitions, and keeps its state in the compacted
// internal topic __transaction_state so that a restart completes or aborts what was in flight.
// Both protocol generations: the classic one (librdkafka, kafkajs, Java < 4) and KIP-890
// transaction version 2 (epoch bump on every EndTxn v5, partitions added implicitly by Produce
// v12 and groups by TxnOffsetCommit v5).
//
//   handlers ──init/add/end/txn_offset_commit──> transaction_coordinator (mutex)
//   produce  ──verify_for_produce(append)──────>   │ txns_: transactional id -> txn_metadata
//                                                  │ append record ──> __transaction_state
//                                                  │                   (flush awaited outside)
//                                                  ├─ complete(): markers ──> data partitions
//                                                  │    (append_guard on each partition's
//                                                  │     producer state), offsets ──> groups
//                                                  └─ ticker: timeouts abort, ids expire,
//                                                       unfinished completions retried
//
// compat: the transitions follow Kafka's TransactionCoordinator / TransactionMetadata (3.9) and
// KIP-890. Two differences, both invisible to clients: EndTxn answers once the markers are
// written and flushed (Kafka answers after PrepareCommit and writes markers asynchronously), and
// InitProducerId that must fence an open transaction aborts it before answering instead of
// answering CONCURRENT_TRANSACTIONS and waiting for the client's retry.
//
// Concurrency: one mutex guards every transaction and the id allocator. Calls validate and
// append to __transaction_state under it without suspending, then wait for the group-commit
// fsync outside it. A transaction whose commit or abort is being completed is marked pending;
// other calls on it get CONCURRENT_TRANSACTIONS. Lock order: this mutex, then a partition's
// append lock, then its producer state; never the other way.
//
// Lifecycle: construct; load() replays __transaction_state; recover() (awaitable) completes the
// transactions a crash left in PrepareCommit/PrepareAbort; start(executor) arms the ticker;
// stop() cancels it. Durability: every answer waits for its __transaction_state records to be
// flushed; markers are flushed before a transaction is recorded complete.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "backend/log/log_env.h"
#include "backend/producer/txn_records.h"
#include "protocol/core/ids.h"
#include "protocol/core/result.h"

namespace sluice::backend::log {
class log_manager;
class partition_log;
}  // namespace sluice::backend::log

namespace sluice::backend::producer {

class producer_state_manager;

inline constexpr const char* transaction_state_topic = "__transaction_state";

/// Settings, with Kafka's names and defaults.
struct txn_settings {
    std::int32_t max_timeout_ms = 900000;               // transaction.max.timeout.ms
    std::int64_t id_expiration_ms = 604800000;          // transactional.id.expiration.ms
    std::int64_t abort_check_interval_ms = 10000;
    // ^ transaction.abort.timed.out.transaction.cleanup.interval.ms
    std::int64_t expiry_check_interval_ms = 3600000;
    // ^ transaction.remove.expired.transaction.cleanup.interval.ms
    std::int32_t state_log_partitions = 1;              // transaction.state.log.num.partitions
    std::int32_t state_log_segment_bytes = 104857600;   // transaction.state.log.segment.bytes
    /// The finalized transaction.version feature (0-2) ApiVersions advertises; 2 lets Java 4.x
    /// and franz-go use KIP-890.
    std::int16_t transaction_version = 2;
    std::int64_t producer_id_block_size = 1000;
};

struct producer_id_and_epoch {
    std::int64_t producer_id = -1;
    std::int16_t epoch = -1;
};

/// One offset of TxnOffsetCommit.
struct txn_offset {
    std::string topic;
    std::int32_t partition = 0;
    std::int64_t offset = -1;
    std::int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
};

/// Where a committed transaction's offsets go: the group coordinator (wired by the server).
class txn_offset_store {
public:
    virtual ~txn_offset_store() = default;
    /// Checks the consumer-group member a TxnOffsetCommit names (KIP-447; generation -1 and
    /// an empty member id skip the check). Returns the group error, or empty.
    virtual std::error_code validate(const std::string& group_id, const std::string& member_id,
                                     const std::optional<std::string>& group_instance_id,
                                     std::int32_t generation_id) = 0;
    /// Stores the offsets of a committed transaction without membership checks; completes once
    /// they are durable.
    virtual boost::asio::awaitable<std::error_code> commit(std::string group_id,
                                                           std::vector<txn_offset> offsets) = 0;
};

struct described_transaction {
    std::string transactional_id;
    std::error_code error;
    txn_state state = txn_state::empty;
    std::int32_t timeout_ms = 0;
    std::int64_t start_ms = -1;
    std::int64_t producer_id = -1;
    std::int16_t producer_epoch = -1;
    std::vector<topic_partition> partitions;
};

struct listed_transaction {
    std::string transactional_id;
    std::int64_t producer_id = -1;
    txn_state state = txn_state::empty;
};

struct txn_clock {
    std::function<std::int64_t()> wall;  // ms since the epoch
    static txn_clock system();
};

class transaction_coordinator {
public:
    transaction_coordinator(log::log_manager& log, producer_state_manager& states,
                            txn_settings settings, txn_clock clock = txn_clock::system());
    ~transaction_coordinator();
    transaction_coordinator(const transaction_coordinator&) = delete;
    transaction_coordinator& operator=(const transaction_coordinator&) = delete;

    /// Replays __transaction_state (blocking; call before serving).
    result<void> load();
    /// Completes every transaction left in PrepareCommit/PrepareAbort (after load()).
    boost::asio::awaitable<void> recover();
    /// Arms the ticker (timeouts, expiry, retries) on `ex`.
    void start(boost::asio::any_io_executor ex);
    void stop();
    void set_offset_store(txn_offset_store* store) { store_ = store; }
    const txn_settings& settings() const { return settings_; }

    // --- the Kafka APIs ------------------------------------------------------------------
    /// InitProducerId. No transactional id: a fresh producer id with epoch 0 (any id/epoch in
    /// the request is ignored, as Kafka does). expected_*: KIP-360 (-1/-1: none).
    boost::asio::awaitable<result<producer_id_and_epoch>> init_producer_id(
        std::optional<std::string> transactional_id, std::int32_t timeout_ms,
        std::int64_t expected_producer_id, std::int16_t expected_epoch);
    /// AddPartitionsToTxn (verify_only: v4+ broker verification). One error per partition.
    boost::asio::awaitable<std::vector<std::error_code>> add_partitions(
        std::string transactional_id, std::int64_t producer_id, std::int16_t epoch,
        std::vector<topic_partition> partitions, bool verify_only);
    boost::asio::awaitable<std::error_code> add_offsets(std::string transactional_id,
                                                        std::int64_t producer_id,
                                                        std::int16_t epoch, std::string group_id);
    /// TxnOffsetCommit: records pending offsets of `group_id` in the transaction. `implicit`
    /// (v5, KIP-890): adds the group when AddOffsetsToTxn was not sent.
    boost::asio::awaitable<std::error_code> txn_offset_commit(
        std::string transactional_id, std::int64_t producer_id, std::int16_t epoch,
        std::string group_id, std::string member_id,
        std::optional<std::string> group_instance_id, std::int32_t generation_id,
        std::vector<txn_offset> offsets, bool implicit);
    /// EndTxn. `tv2` (v5): bump the epoch and return the id/epoch for the next transaction.
    boost::asio::awaitable<result<producer_id_and_epoch>> end_txn(std::string transactional_id,
                                                                  std::int64_t producer_id,
                                                                  std::int16_t epoch, bool commit,
                                                                  bool tv2);

    /// The produce path, for transactional batches: checks that (producer id, epoch) owns the
    /// ongoing transaction of `transactional_id` and that the partition is in it (adding it
    /// when `implicit`, KIP-890), then runs `append` under the coordinator lock so that no
    /// marker can slip between the check and the append. When the partition was added,
    /// `txn_log_end` receives the __transaction_state position to flush before answering.
    std::error_code verify_for_produce(const std::string& transactional_id,
                                       std::int64_t producer_id, std::int16_t epoch,
                                       const topic_partition& tp, bool implicit,
                                       const std::function<void()>& append,
                                       std::shared_ptr<log::partition_log>* txn_log,
                                       offset* txn_log_end);

    std::vector<described_transaction> describe(const std::vector<std::string>& ids);
    /// ListTransactions filters: states (names), producer ids, minimum duration (-1: any).
    std::vector<listed_transaction> list(const std::vector<txn_state>& states,
                                         const std::vector<std::int64_t>& producer_ids,
                                         std::int64_t min_duration_ms,
                                         const std::function<bool(const std::string&)>& id_filter);
    /// True when an open transaction holds uncommitted offsets for the group's partition
    /// (OffsetFetch require_stable answers UNSTABLE_OFFSET_COMMIT then).
    bool has_pending_offsets(const std::string& group_id, const std::string& topic,
                             std::int32_t partition) const;

    /// Aborts timed-out transactions, retries unfinished completions, expires idle ids. The
    /// ticker calls it; tests call it with a manual clock.
    boost::asio::awaitable<void> run_timers();

private:
    struct flush_target {
        std::shared_ptr<log::partition_log> log;
        offset end{0};
    };
    struct entry {
        txn_metadata md;
        bool pending = false;  // a commit/abort is being completed
    };

    std::shared_ptr<log::partition_log> state_partition(const std::string& transactional_id,
                                                        bool create);
    result<flush_target> persist_locked(const std::string& id, const txn_metadata* md);
    result<std::int64_t> allocate_pid_locked(std::vector<flush_target>& flushes);
    static boost::asio::awaitable<std::error_code> flush(std::vector<flush_target> targets);
    boost::asio::awaitable<std::error_code> complete(std::string id);
    boost::asio::awaitable<std::error_code> fence_and_abort(std::string id);
    std::error_code check_owner_locked(const std::string& id, std::int64_t producer_id,
                                       std::int16_t epoch, entry** out);
    boost::asio::awaitable<void> ticker_loop();
    std::int64_t now() const { return clock_.wall(); }

    log::log_manager& log_;
    producer_state_manager& states_;
    const txn_settings settings_;
    const txn_clock clock_;
    txn_offset_store* store_ = nullptr;

    mutable std::mutex mu_;
    std::map<std::string, entry> txns_;
    std::int64_t next_pid_ = 0;
    std::int64_t block_end_ = 0;
    std::atomic<bool> loaded_{false};
    std::atomic<bool> stopping_{false};
    std::int64_t last_expiry_ms_ = 0;

    std::unique_ptr<boost::asio::steady_timer> ticker_;
};

}  // namespace sluice::backend::producer
