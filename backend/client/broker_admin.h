// api::admin over the broker level (owned by backend/client): topics, configs, offsets, groups
// with lag, and a one-node topology (this node leads every partition).
#pragma once

#include <memory>

#include "backend/api/client.h"
#include "backend/api/groups.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"
#include "backend/client/broker_client.h"

namespace sluice::backend::client {

std::unique_ptr<api::admin> make_broker_admin(api::topics& topics, api::records& records,
                                              api::groups& groups,
                                              const broker_client_options& opts);

}  // namespace sluice::backend::client
