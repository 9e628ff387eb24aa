// api::records over the native log (owned by backend/native): the produce path (idempotence
// and transaction checks inside the partition's append, acks=all answered after the group-
// commit fsync), the fetch path (parked without polling until min_bytes or max_wait; the last
// stable offset and aborted transactions for read_committed), offsets by time, and delete
// records.
//
//   produce ──> partition_log::append (append_guard on the producer state; transactional
//                 batches inside transaction_coordinator::verify_for_produce)
//          └──> partition_log::flush_to (acks=all)
//   fetch ───> partition_log::read (file regions) ──> park on every partition (timer_waiter)
//
// Producer states are loaded on first use off the io threads (producer_state_manager turns),
// which also keeps the appends of one connection to one partition in call order.
// Concurrency: thread-safe; callers' executors must not run handlers concurrently.
#pragma once

#include <atomic>

#include <boost/asio/any_io_executor.hpp>

#include "backend/api/records.h"
#include "backend/log/log_manager.h"
#include "backend/native/traffic.h"
#include "backend/producer/producer_state_manager.h"
#include "backend/producer/transaction_coordinator.h"

namespace sluice::backend::native {

class native_records final : public api::records {
public:
    native_records(log::log_manager& log, producer::producer_state_manager& states,
                   producer::transaction_coordinator& txn, boost::asio::any_io_executor pool,
                   traffic& counters);

    api::awaitable<api::produce_result> produce(api::produce_request req) override;
    api::awaitable<api::fetch_result> fetch(api::fetch_request req) override;
    api::awaitable<std::vector<api::found_offset>> list_offsets(
        std::vector<api::offset_query> queries, api::isolation isolation) override;
    api::awaitable<std::vector<api::backend_result<offset>>> delete_records(
        std::vector<api::delete_records_request> reqs) override;
    std::int64_t parked_fetches() const override {
        return parked_.load(std::memory_order_relaxed);
    }

private:
    /// The producer state of `log`, loaded off the caller's thread when needed.
    api::awaitable<result<std::shared_ptr<producer::partition_producer_state>>> state_of(
        std::shared_ptr<log::partition_log> log);

    log::log_manager& log_;
    producer::producer_state_manager& states_;
    producer::transaction_coordinator& txn_;
    boost::asio::any_io_executor pool_;
    traffic& traffic_;
    std::atomic<std::int64_t> parked_{0};
};

}  // namespace sluice::backend::native
