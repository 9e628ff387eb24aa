#include "backend/client/broker_producer.h"

#include <stdexcept>

namespace sluice::backend::client {

// Placeholder until the producer lands (issue 26, in progress).
std::unique_ptr<api::producer> make_broker_producer(api::topics&, api::records&) {
    return nullptr;
}

}  // namespace sluice::backend::client
