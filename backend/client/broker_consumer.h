// api::consumer over the broker level (owned by backend/client): a classic group member
// (JoinGroup/SyncGroup/Heartbeat through api::groups, as a Kafka consumer) or partitions
// assigned by hand, positions from commits or the reset policy, polls as one records::fetch.
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "backend/api/client.h"
#include "backend/api/groups.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"

namespace sluice::backend::client {

std::shared_ptr<api::consumer> open_broker_consumer(api::topics& topics, api::records& records,
                                                    api::groups& groups,
                                                    api::consumer_options opts,
                                                    boost::asio::any_io_executor ex);

}  // namespace sluice::backend::client
