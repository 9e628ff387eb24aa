// The backends the conformance suite runs against: one factory per backend. A new backend
// passes the suite by adding its factory (a class modelled on native_factory.h) to this list.
#pragma once

#include <gtest/gtest.h>

#include "tests/backend/contract/native_factory.h"

namespace sluice::backend::contract {

using backend_factories = ::testing::Types<native_factory>;

}  // namespace sluice::backend::contract
