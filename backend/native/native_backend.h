// The native backend: sluice's embedded log behind the backend interface (owned by
// backend/native). It owns the log manager, the group coordinator, the producer states and the
// transaction coordinator, wires them together, and hands out their api interfaces; nothing
// outside backend/native sees these classes (the start-up file only names native_backend).
//
//   native_backend ──owns──> log_manager (backend/log)
//        │                   group_coordinator (backend/group)        ── api::groups
//        │                   producer_state_manager, transaction_coordinator (backend/producer)
//        │                   a blocking pool (admin work, producer-state loads)
//        ├── native_topics ──────────────────────────────────────────── api::topics
//        ├── native_records (produce, fetch, offsets) ─────────────────── api::records
//        ├── native_transactions ─────────────────────────────────────── api::transactions
//        └── queue_service (backend/queue) over native_topics, native_records
//              and native_queue_store (__queue_state) ─────────────────── api::queues
//
// Lifecycle: open() recovers everything (the log, then groups and committed offsets, then the
// transaction state, completing commits and aborts a crash interrupted, then the queues) before
// any front can call it; start() arms the coordinators' timers and starts the queues' tailers;
// stop() answers parked group calls and long polls; close() joins the blocking pool, snapshots
// producer states and closes the log.
// Concurrency: every interface is thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "backend/api/backend.h"
#include "backend/api/queues.h"
#include "backend/api/transactions.h"
#include "backend/group/group_coordinator.h"
#include "backend/log/log_manager.h"
#include "backend/producer/producer_state_manager.h"
#include "backend/producer/transaction_coordinator.h"
#include "backend/queue/queue_service.h"

namespace sluice::backend::native {

struct native_options {
    /// The log: data directory, topic defaults, flush policy, background intervals.
    log::log_options log;
    /// The broker settings the topic defaults were read from (Kafka's names), to tell an
    /// administrator where each config value comes from.
    std::map<std::string, std::string> properties;
    group::coordinator_config groups;
    producer::producer_state_settings producers;
    producer::txn_settings transactions;
    /// Threads for blocking work (topic administration, producer-state loads).
    std::size_t blocking_threads = 2;
    /// SQS queues over the topics (backend/queue).
    queue::queue_settings queues;
    /// segment.bytes of the queue state topic (__queue_state).
    std::int64_t queue_state_segment_bytes = 64 << 20;
};

class native_backend final : public api::backend {
public:
    /// Opens and recovers everything. Throws std::runtime_error naming what failed.
    static std::unique_ptr<native_backend> open(native_options opts);
    ~native_backend() override;
    native_backend(const native_backend&) = delete;
    native_backend& operator=(const native_backend&) = delete;

    api::topics& topics() override;
    api::records& records() override;
    api::groups& groups() override;
    api::transactions& transactions();
    api::queues& queues();

    void start(boost::asio::any_io_executor ex) override;
    void stop() override;
    void close() override;

private:
    struct parts;
    explicit native_backend(std::unique_ptr<parts> p);
    std::unique_ptr<parts> p_;
};

}  // namespace sluice::backend::native
