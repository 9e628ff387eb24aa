// The client levels the client-level conformance suite runs against: one factory each. The
// upstream backend's (a librdkafka client level over a mock cluster) joins this list.
#pragma once

#include <gtest/gtest.h>

#include "tests/backend/contract/native_client_factory.h"

namespace sluice::backend::contract {

using client_factories = ::testing::Types<native_client_factory>;

}  // namespace sluice::backend::contract
