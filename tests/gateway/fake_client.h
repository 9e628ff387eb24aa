// The client level (backend/api/client.h) over the fake backend, for the front tests of the
// routes that stand on it (REST produce and metadata, WebSocket produce): the native client
// level (backend/client) over the fake's topics, records and groups, so that the tests still
// see what the broker level was asked.
#pragma once

#include <memory>

#include "backend/api/client.h"
#include "backend/client/broker_client.h"
#include "backend/client/broker_producer.h"
#include "tests/gateway/fake_backend.h"

namespace sluice::gateway::testing {

/// A one-node topology: node 0 at localhost:9092 of cluster "cluster-1".
inline std::unique_ptr<backend::api::client> client_over(fake_backend& fake) {
    backend::client::broker_client_options opts;
    opts.cluster_id = "cluster-1";
    opts.self.node_id = 0;
    opts.self.host = "localhost";
    opts.self.port = 9092;
    return backend::client::make_broker_client(fake.topics(), fake.records(), fake.groups(),
                                               std::move(opts));
}

}  // namespace sluice::gateway::testing
