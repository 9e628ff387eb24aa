// Errors of the producer-state and transaction module (backend/producer): why an idempotent
// append, a transaction coordinator call or a producer id request failed. Most values are the
// Kafka errors a broker returns for the same cause; each one means one backend/api
// error (errc.cc: default_error_condition).
#pragma once

#include <system_error>

namespace sluice::backend::producer {

enum class errc {
    out_of_order_sequence = 1,    // the batch's first sequence is not the next expected one
    invalid_producer_epoch,       // a data batch or marker carries an epoch older than the
                                  // partition's (the producer was fenced)
    invalid_txn_state,            // transactional data outside a transaction the coordinator
                                  // knows, non-transactional data inside one, or an EndTxn
                                  // that does not fit the transaction's state
    transaction_abortable,        // (produce v11+) the partition is not in the transaction
    invalid_request,              // empty transactional id where one is required, and the like
    invalid_transaction_timeout,  // above transaction.max.timeout.ms, or not positive
    concurrent_transactions,      // the transaction is completing (commit/abort in progress)
    producer_fenced,              // the transactional id has a newer epoch
    invalid_producer_id_mapping,  // unknown transactional id, or another producer id
    transactional_id_not_found,   // DescribeTransactions of an unknown id
    coordinator_loading,          // __transaction_state is being replayed
    coordinator_not_available,    // the transaction log cannot be written
    storage_error,                // a producer-state snapshot or the log failed
};

const std::error_category& producer_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), producer_category()};
}

}  // namespace sluice::backend::producer

template <>
struct std::is_error_code_enum<sluice::backend::producer::errc> : std::true_type {};
