// The native backend's client level (owned by backend/client): api::client (producer,
// consumers, admin, topology) written over the broker-level interfaces (api::topics, records,
// groups), so that the HTTP, WebSocket and SSE fronts run on the same interface over the
// embedded log as over a Kafka cluster (backend/upstream). Nothing here adds work to the
// broker level's hot paths: a send builds one record batch per partition and calls
// records::produce once, a poll is one records::fetch.
#pragma once

#include <memory>
#include <string>

#include "backend/api/broker_config_store.h"
#include "backend/api/client.h"
#include "backend/api/groups.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"

namespace sluice::backend::client {

struct broker_client_options {
    std::string cluster_id;
    /// This node as the topology shows it (the advertised Kafka listener).
    api::broker_info self;
    /// Where admin's describe/create/delete_acls go (the gateway's authorizer); null: no
    /// authorizer, they answer unsupported (Kafka's SECURITY_DISABLED). Must outlive the client.
    api::acl_store* acls = nullptr;
    /// Where admin's cluster configs and broker config changes go (the Kafka front's dynamic
    /// configs); null: none are set and changes answer unsupported. Must outlive the client.
    api::broker_config_store* broker_configs = nullptr;
};

/// The client level over one broker-level backend; the interfaces must outlive it.
std::unique_ptr<api::client> make_broker_client(api::topics& topics, api::records& records,
                                                api::groups& groups, broker_client_options opts);

}  // namespace sluice::backend::client
