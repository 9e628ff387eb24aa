// api::transactional_producer over a Kafka cluster (owned by backend/upstream): a librdkafka
// producer handle of its own with a transactional.id, its transactions run on a thread of its
// own.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "backend/api/client.h"

namespace sluice::backend::upstream {

/// A transactional producer: `props` are the client's librdkafka properties (bootstrap and
/// security), to which it adds transactional.id (and idempotence, acks=all, linger.ms=0: a
/// commit sends at once). Throws std::invalid_argument when librdkafka refuses a property.
std::unique_ptr<api::transactional_producer> make_upstream_txn_producer(
    const std::map<std::string, std::string>& props, const std::string& transactional_id);

}  // namespace sluice::backend::upstream
