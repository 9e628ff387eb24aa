// The client levels the client-level conformance suite runs against: one factory each: the
// native backend's, and the upstream backend's (a librdkafka client level over librdkafka's
// mock cluster).
#pragma once

#include <gtest/gtest.h>

#include "tests/backend/contract/native_client_factory.h"
#include "tests/backend/contract/upstream_client_factory.h"

namespace sluice::backend::contract {

using client_factories = ::testing::Types<native_client_factory, upstream_client_factory>;

}  // namespace sluice::backend::contract
