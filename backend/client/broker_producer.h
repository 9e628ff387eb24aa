// api::producer over api::records (owned by backend/client): the partitioner (Kafka's murmur2
// for keys, sticky per call otherwise), one v2 record batch per partition, one produce call.
#pragma once

#include <memory>

#include "backend/api/client.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"

namespace sluice::backend::client {

std::unique_ptr<api::producer> make_broker_producer(api::topics& topics, api::records& records);

}  // namespace sluice::backend::client
