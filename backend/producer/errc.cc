#include "backend/producer/errc.h"

#include <string>

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
};

}  // namespace

const std::error_category& producer_category() noexcept {
    static const category c;
    return c;
}

}  // namespace sluice::backend::producer
