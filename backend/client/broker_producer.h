// api::producer over api::records (owned by backend/client): the partitioner (Kafka's murmur2
// for keys, sticky per call otherwise), one v2 record batch per partition, one produce call.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "backend/api/client.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"

namespace sluice::backend::client {

std::unique_ptr<api::producer> make_broker_producer(api::topics& topics, api::records& records);

/// Kafka's default partitioner for keyed records (murmur2 of the key bytes, made positive,
/// modulo the partition count): a record and a Java producer's record with the same key land
/// in the same partition.
std::int32_t partition_for_key(std::string_view key, std::int32_t partitions);

}  // namespace sluice::backend::client
