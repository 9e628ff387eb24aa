// The native backend's client level (backend/client over backend/native) as a factory of the
// client-level conformance suite.
#pragma once

#include <memory>
#include <string_view>

#include "tests/backend/contract/client_fixture.h"

namespace sluice::backend::contract {

class native_client_factory {
public:
    static constexpr std::string_view name = "native";
    native_client_factory();
    ~native_client_factory();
    native_client_factory(const native_client_factory&) = delete;
    native_client_factory& operator=(const native_client_factory&) = delete;
    std::unique_ptr<client_under_test> open();

private:
    struct data;
    std::unique_ptr<data> data_;
};

}  // namespace sluice::backend::contract
