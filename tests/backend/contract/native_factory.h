// The native backend (backend/native) as a factory of the conformance suite: declared with
// backend/api types only, so that the contract tests never see the implementation.
#pragma once

#include <memory>
#include <string_view>

#include "tests/backend/contract/contract_fixture.h"

namespace sluice::backend::contract {

/// Opens native backends on one in-memory file system (the same data dir each time), with
/// background intervals off and no initial rebalance delay so that tests run quickly.
/// Otherwise the backend runs with the settings a server starts with.
class native_factory {
public:
    static constexpr std::string_view name = "native";

    native_factory();
    ~native_factory();
    native_factory(const native_factory&) = delete;
    native_factory& operator=(const native_factory&) = delete;

    std::unique_ptr<backend_under_test> open();

private:
    struct data;
    std::unique_ptr<data> data_;
};

}  // namespace sluice::backend::contract
