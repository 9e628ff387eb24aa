// api::transactions over the native transaction coordinator and producer states (owned by
// backend/native). Client-supplied transactional id patterns are compiled with RE2 (linear
// time), once per call, before the coordinator's lock is taken.
// Concurrency: thread-safe, as the coordinator is.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include "backend/api/transactions.h"
#include "backend/log/log_manager.h"
#include "backend/producer/producer_state_manager.h"
#include "backend/producer/transaction_coordinator.h"

namespace sluice::backend::native {

class native_transactions final : public api::transactions {
public:
    native_transactions(log::log_manager& log, producer::producer_state_manager& states,
                        producer::transaction_coordinator& txn,
                        boost::asio::any_io_executor pool);

    api::awaitable<api::backend_result<api::producer_identity>> init_producer_id(
        std::optional<transactional_id> txn_id, std::int32_t timeout_ms,
        api::producer_identity expected) override;
    api::awaitable<std::vector<api::backend_error>> add_partitions(
        transactional_id txn_id, api::producer_identity producer,
        std::vector<api::txn_partition> parts, bool verify_only) override;
    api::awaitable<api::backend_result<void>> add_offsets(transactional_id txn_id,
                                                          api::producer_identity producer,
                                                          sluice::group_id group) override;
    api::awaitable<api::backend_result<void>> txn_offset_commit(
        api::txn_offset_commit_request req) override;
    api::awaitable<api::backend_result<api::producer_identity>> end_txn(transactional_id txn_id,
                                                           api::producer_identity producer,
                                                           bool commit, bool bump_epoch) override;
    api::awaitable<std::vector<api::described_transaction>> describe(
        std::vector<transactional_id> ids) override;
    api::awaitable<api::backend_result<api::listed_transactions>> list(api::transaction_filter filter) override;
    api::awaitable<api::backend_result<std::vector<api::active_producer>>> describe_producers(
        topic_name topic, partition_id partition) override;
    std::int16_t transaction_version() const override;

private:
    log::log_manager& log_;
    producer::producer_state_manager& states_;
    producer::transaction_coordinator& txn_;
    boost::asio::any_io_executor pool_;
};

}  // namespace sluice::backend::native
