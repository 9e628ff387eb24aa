// The SQS front's settings (owned by gateway/sqs): the table of sqs.authentication,
// sqs.region, sqs.account.id, sqs.advertised.url and the fleet's sqs.fleet.* (upstream mode),
// and their reader. The queues' own limits (sqs.queue.partitions, sqs.read.ahead.*, ...) are the backend's (the native backend's
// table); the allowed origins are the HTTP front's list, set by run_server. Read once at start.
#pragma once

#include <chrono>
#include <string>

#include "backend/api/settings.h"
#include "gateway/core/config.h"
#include "gateway/sqs/actions.h"

namespace sluice::gateway::sqs {

/// The front's table, in the doc's order.
const backend::api::setting_table& sqs_setting_table();

struct sqs_front_config {
    sqs_settings front;
    bool sigv4 = false;  // sqs.authentication
    /// sqs.fleet.url (no trailing slash; empty: the listener's address).
    std::string fleet_url;
    std::chrono::milliseconds fleet_session_timeout{10000};  // sqs.fleet.session.timeout.ms
};

/// Reads (and checks) the front's settings; throws config_error naming a bad one.
sqs_front_config read_sqs_settings(const config& cfg);

}  // namespace sluice::gateway::sqs
