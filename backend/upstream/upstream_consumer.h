// api::consumer over a Kafka cluster (owned by backend/upstream): one librdkafka consumer per
// api::consumer, a real member of the upstream group (its group.id is the consumer's group),
// or partitions assigned by hand.
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/thread_pool.hpp>

#include "backend/api/client.h"
#include "backend/upstream/upstream_client.h"

namespace sluice::backend::upstream {

class consumer_statistics;

/// `blocking` runs librdkafka's blocking calls (offset lookups, commits with a wait); `ex` the
/// consumer's background work and its callbacks; `stats` (may be null: no statistics) collects
/// librdkafka's statistics of the consumer's handle (every statistics.interval.ms, 5 s unless
/// the properties say otherwise).
std::shared_ptr<api::consumer> open_upstream_consumer(
    const upstream_options& opts, boost::asio::thread_pool& blocking,
    api::consumer_options copts, boost::asio::any_io_executor ex,
    std::shared_ptr<consumer_statistics> stats = nullptr);

}  // namespace sluice::backend::upstream
