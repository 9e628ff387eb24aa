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
    std::unique_ptr<client_under_test> open();
};

}  // namespace sluice::backend::contract
