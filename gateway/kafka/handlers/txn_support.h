// Helpers shared by the transaction handlers (init_producer_id.cc, end_txn.cc, ...): the
// version-dependent error translations Kafka applies to the coordinator's answers.
#pragma once

#include <cstdint>
#include <system_error>

#include "backend/api/common.h"
#include "gateway/kafka/error_mapping.h"
#include "protocol/kafka/error_code.h"

namespace sluice::gateway {

/// The coordinator's error as the Kafka error of a request at `version`.
/// `fenced_since`: the first version that knows PRODUCER_FENCED (older ones get
/// INVALID_PRODUCER_EPOCH; compat: KafkaApis, KIP-588). `abortable_since`: the first version
/// that knows TRANSACTION_ABORTABLE (older ones get INVALID_TXN_STATE; KIP-890).
inline protocol::kafka::error_code txn_error(const backend::api::backend_error& ec,
                                             std::int16_t version,
                                             std::int16_t fenced_since,
                                             std::int16_t abortable_since) {
    namespace kafka = protocol::kafka;
    if (!ec) {
        return kafka::error_code::none;
    }
    auto code = to_kafka(ec);
    if (code == kafka::error_code::producer_fenced && version < fenced_since) {
        return kafka::error_code::invalid_producer_epoch;
    }
    if (code == kafka::error_code::transaction_abortable && version < abortable_since) {
        return kafka::error_code::invalid_txn_state;
    }
    return code;
}

}  // namespace sluice::gateway
