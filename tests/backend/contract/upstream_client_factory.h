// backend/upstream's client level (librdkafka) over librdkafka's mock cluster as a factory of
// the client-level conformance suite.
#pragma once

#include <memory>
#include <string_view>

#include "tests/backend/contract/client_fixture.h"

namespace sluice::backend::contract {

/// Every client it opens stands on the one mock cluster of the test run (three brokers,
/// tests/backend/upstream/mock_cluster.h): tests share it and use unique topic names.
///
/// What the librdkafka 2.0.2 mock lacks: CreateTopics (the factory's admin creates topics in
/// the mock directly: partition count only, configs are not kept), DescribeConfigs,
/// AlterConfigs, DeleteRecords, ListGroups, DescribeGroups, offsets by timestamp (answered -1),
/// a produce timestamp (every Produce answer carries LogAppendTime 1234).
class upstream_client_factory {
public:
    static constexpr std::string_view name = "upstream";
    /// The mock's rebalances wait session.timeout.ms - 1 s for the members: a shorter session
    /// keeps the group tests quick. Not below the mock's 3 s first-join delay, during which a
    /// joining member sends no heartbeat (the mock would time it out). Heartbeats every 300 ms.
    static constexpr int session_timeout_ms = 4000;
    std::unique_ptr<client_under_test> open();
    /// Why the mock cannot serve `feature` (see stand_in_lacks), or "" when it can.
    static std::string_view lacks(std::string_view feature);
};

/// Why the cluster under factory F cannot serve `feature`, or "" when it can (a factory
/// without `lacks` serves everything): what the client suite's tests skip, saying why.
/// Features: "topic_configs" (configs at creation, DescribeConfigs, AlterConfigs, limits and
/// timestamp types from configs), "delete_topics", "create_partitions", "delete_records",
/// "group_admin" (ListGroups, DescribeGroups, DeleteGroups), "all_committed_offsets"
/// (OffsetFetch of every partition), "offsets_by_timestamp", "produce_timestamps" (the stored
/// timestamp in a delivery), "controller" (a controller that is one of the brokers),
/// "prompt_rebalance" (a rebalance after a LeaveGroup that does not wait for the remaining
/// members' session).
template <typename F>
std::string_view stand_in_lacks(std::string_view feature) {
    if constexpr (requires { F::lacks(feature); }) {
        return F::lacks(feature);
    } else {
        return {};
    }
}

}  // namespace sluice::backend::contract
