// The errors the queue service's files share (owned by backend/queue): one definition each, so
// that the files also build as one unity batch.
#pragma once

#include <string>
#include <utility>

#include "backend/api/errc.h"
#include "backend/api/queues.h"

namespace sluice::backend::queue {

inline api::backend_error no_queue() {
    return {make_error_code(api::errc::queue_does_not_exist), "The specified queue does not exist."};
}

inline api::backend_error invalid(std::string message) {
    return {make_error_code(api::errc::invalid_parameter_value), std::move(message)};
}

}  // namespace sluice::backend::queue
