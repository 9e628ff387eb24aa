#include "backend/producer/errc.h"

#include <string>

#include "backend/api/errc.h"

namespace sluice::backend::producer {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "producer"; }
    std::string message(int v) const override {
        switch (static_cast<errc>(v)) {
            case errc::out_of_order_sequence: return "out of order sequence number";
            case errc::invalid_producer_epoch: return "invalid producer epoch";
            case errc::invalid_txn_state: return "invalid transaction state";
            case errc::transaction_abortable: return "the transaction must be aborted";
            case errc::invalid_request: return "invalid request";
            case errc::invalid_transaction_timeout: return "invalid transaction timeout";
            case errc::concurrent_transactions: return "a transaction is completing";
            case errc::producer_fenced: return "producer fenced by a newer epoch";
            case errc::invalid_producer_id_mapping: return "invalid producer id mapping";
            case errc::transactional_id_not_found: return "transactional id not found";
            case errc::coordinator_loading: return "the transaction coordinator is loading";
            case errc::coordinator_not_available:
                return "the transaction coordinator is not available";
            case errc::storage_error: return "producer state storage error";
        }
        return "unknown producer error " + std::to_string(v);
    }

    // What each value means to the fronts (backend/api/errc.h): one exhaustive switch.
    std::error_condition default_error_condition(int v) const noexcept override {
        namespace api = backend::api;
        switch (static_cast<errc>(v)) {
            case errc::out_of_order_sequence:
                return api::make_condition(api::errc::out_of_order_sequence);
            case errc::invalid_producer_epoch:
                return api::make_condition(api::errc::invalid_producer_epoch);
            case errc::invalid_txn_state:
                return api::make_condition(api::errc::invalid_txn_state);
            case errc::transaction_abortable:
                return api::make_condition(api::errc::transaction_abortable);
            case errc::invalid_request:
                return api::make_condition(api::errc::invalid_request);
            case errc::invalid_transaction_timeout:
                return api::make_condition(api::errc::invalid_transaction_timeout);
            case errc::concurrent_transactions:
                return api::make_condition(api::errc::concurrent_transactions);
            case errc::producer_fenced:
                return api::make_condition(api::errc::producer_fenced);
            case errc::invalid_producer_id_mapping:
                return api::make_condition(api::errc::invalid_producer_id_mapping);
            case errc::transactional_id_not_found:
                return api::make_condition(api::errc::transactional_id_not_found);
            case errc::coordinator_loading:
                return api::make_condition(api::errc::coordinator_loading);
            case errc::coordinator_not_available:
                return api::make_condition(api::errc::coordinator_not_available);
            case errc::storage_error:
                return api::make_condition(api::errc::storage_error);
        }
        return api::make_condition(api::errc::unknown);
    }
};

}  // namespace

const std::error_category& producer_category() noexcept {
    static const category c;
    return c;
}

}  // namespace sluice::backend::producer
