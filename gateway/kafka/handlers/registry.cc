#include "gateway/kafka/handlers/registry.h"

#include <array>

namespace sluice::gateway {

namespace {

#define SLUICE_KAFKA_ENTRY(api, lo, hi) entry_for<api##_handler>(),
constexpr std::array registered = {SLUICE_KAFKA_APIS(SLUICE_KAFKA_ENTRY)};
#undef SLUICE_KAFKA_ENTRY

constexpr bool ascending_keys() {
    for (std::size_t i = 1; i < registered.size(); ++i) {
        if (registered[i - 1].api_key >= registered[i].api_key) {
            return false;
        }
    }
    return true;
}
static_assert(ascending_keys(), "SLUICE_KAFKA_APIS must list each API once, ascending by key");

}  // namespace

std::span<const handler_entry> handler_registry() { return registered; }

}  // namespace sluice::gateway
