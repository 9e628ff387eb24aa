#include "backend/native/native_backend.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "backend/io/file.h"
#include "backend/logger.h"
#include "backend/native/clock.h"
#include "backend/native/native_queue_store.h"
#include "backend/native/native_records.h"
#include "backend/native/native_topics.h"
#include "backend/native/native_transactions.h"
#include "backend/native/traffic.h"

namespace sluice::backend::native {
namespace asio = boost::asio;

namespace {

/// Connects the transaction coordinator to the group coordinator: the member check of
/// TxnOffsetCommit and the offsets a committed transaction stores. The two modules do not
/// include each other; this link holds a reference only.
class txn_offset_link final : public producer::txn_offset_store {
public:
    explicit txn_offset_link(group::group_coordinator& groups) : groups_(groups) {}

    std::error_code validate(const std::string& group, const std::string& member_id,
                             const std::optional<std::string>& group_instance_id,
                             std::int32_t generation_id) override {
        return groups_.validate_txn_commit(sluice::group_id(group), member_id, group_instance_id,
                                           generation_id);
    }

    asio::awaitable<std::error_code> commit(std::string group,
                                            std::vector<producer::txn_offset> offsets) override {
        std::vector<api::commit_topic> topics;
        for (auto& o : offsets) {
            auto it = std::find_if(topics.begin(), topics.end(),
                                   [&](const auto& t) { return t.topic.value == o.topic; });
            if (it == topics.end()) {
                topics.push_back({topic_name(o.topic), {}});
                it = topics.end() - 1;
            }
            it->partitions.push_back({partition_id(o.partition), offset(o.offset),
                                      o.leader_epoch, std::move(o.metadata)});
        }
        co_return co_await groups_.commit_txn_offsets(sluice::group_id(std::move(group)),
                                                      std::move(topics));
    }

private:
    group::group_coordinator& groups_;
};

}  // namespace

struct native_backend::parts {
    std::unique_ptr<log::log_manager> log;
    std::unique_ptr<group::group_coordinator> groups;
    std::unique_ptr<producer::producer_state_manager> producer_states;
    std::unique_ptr<producer::transaction_coordinator> txn;
    std::unique_ptr<txn_offset_link> link;
    std::unique_ptr<asio::thread_pool> pool;
    traffic counters;
    std::unique_ptr<native_topics> topics;
    std::unique_ptr<native_records> records;
    std::unique_ptr<native_transactions> transactions;
    std::unique_ptr<native_queue_store> queue_store;
    std::unique_ptr<queue::queue_service> queues;
    bool closed = false;
};

std::unique_ptr<native_backend> native_backend::open(native_options opts) {
    auto p = std::make_unique<parts>();
    if (!opts.log.fs) {
        // The producer-state snapshots live in the partition folders: same file system.
        opts.log.fs = io::make_posix_file_system();
    }
    auto opened = log::log_manager::open(opts.log);
    if (!opened) {
        throw std::runtime_error("cannot open the log in " + opts.log.data_dir + ": " +
                                 opened.error().message());
    }
    p->log = std::move(*opened);

    // Groups and committed offsets are replayed before anything uses them (the transaction
    // recovery below commits offsets into groups).
    p->groups = std::make_unique<group::group_coordinator>(*p->log, opts.groups);
    p->groups->load();

    // Idempotent producers and transactions: producer state per partition, the transaction
    // coordinator over __transaction_state (replayed now; interrupted commits and aborts are
    // completed before open() returns).
    p->producer_states = std::make_unique<producer::producer_state_manager>(
        *p->log, opts.log.fs, opts.producers, log::clock_fn(wall_clock_ms));
    p->producer_states->start();
    p->txn = std::make_unique<producer::transaction_coordinator>(*p->log, *p->producer_states,
                                                                 opts.transactions);
    p->link = std::make_unique<txn_offset_link>(*p->groups);
    p->txn->set_offset_store(p->link.get());
    // OffsetFetch require_stable: UNSTABLE_OFFSET_COMMIT while a transaction holds offsets.
    p->groups->set_pending_txn_offsets(
        [t = p->txn.get()](const sluice::group_id& group, const topic_name& topic,
                           partition_id partition) {
            return t->has_pending_offsets(group.value, topic.value, partition.value);
        });
    if (auto loaded = p->txn->load(); !loaded) {
        throw std::runtime_error("cannot load the transaction state: " +
                                 loaded.error().message());
    }
    {
        asio::io_context recovery;
        asio::co_spawn(recovery, p->txn->recover(), asio::detached);
        recovery.run();
    }

    p->pool = std::make_unique<asio::thread_pool>(std::max<std::size_t>(1, opts.blocking_threads));
    p->topics = std::make_unique<native_topics>(*p->log, opts.properties, p->pool->get_executor(),
                                                p->counters);
    p->records = std::make_unique<native_records>(*p->log, *p->producer_states, *p->txn,
                                                  p->pool->get_executor(), p->counters);
    p->transactions = std::make_unique<native_transactions>(*p->log, *p->producer_states, *p->txn,
                                                            p->pool->get_executor());
    // Queues last: they read the topics through the interfaces above.
    p->queue_store = std::make_unique<native_queue_store>(*p->log, opts.queue_state_segment_bytes);
    auto clock = opts.log.clock ? opts.log.clock : log::clock_fn(wall_clock_ms);
    p->queues = std::make_unique<queue::queue_service>(*p->topics, *p->records, *p->queue_store,
                                                       opts.queues, clock);
    p->queues->load();
    return std::unique_ptr<native_backend>(new native_backend(std::move(p)));
}

native_backend::native_backend(std::unique_ptr<parts> p) : p_(std::move(p)) {}

native_backend::~native_backend() { close(); }

api::topics& native_backend::topics() { return *p_->topics; }
api::records& native_backend::records() { return *p_->records; }
api::groups& native_backend::groups() { return *p_->groups; }
api::transactions& native_backend::transactions() { return *p_->transactions; }
api::queues& native_backend::queues() { return *p_->queues; }

void native_backend::start(asio::any_io_executor ex) {
    p_->groups->start(ex);
    p_->txn->start(ex);
    p_->queues->start(ex);
}

void native_backend::stop() {
    // Parked JoinGroup/SyncGroup calls and long polls are answered now so that connections
    // can finish.
    p_->groups->stop();
    p_->queues->stop();
}

void native_backend::close() {
    if (p_->closed) {
        return;
    }
    p_->closed = true;
    p_->queues->stop();
    // Blocking work still running (a topic creation, a state load) finishes first.
    p_->pool->join();
    p_->txn->stop();
    p_->txn.reset();
    p_->groups.reset();
    // Snapshots of the producer state, so that the next start does not replay the logs.
    p_->producer_states->stop();
    p_->producer_states.reset();
    p_->log->close();
}

}  // namespace sluice::backend::native
