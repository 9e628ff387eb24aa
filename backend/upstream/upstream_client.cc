#include "backend/upstream/upstream_client.h"

#include <stdexcept>

namespace sluice::backend::upstream {

// Placeholder until the librdkafka clients land (issue 26, in progress).
std::unique_ptr<api::client> make_upstream_client(upstream_options) {
    throw std::invalid_argument("upstream mode is not built yet");
}

}  // namespace sluice::backend::upstream
