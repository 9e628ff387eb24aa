// The one place where module errors become Kafka error codes (STYLE.md section 4).
#pragma once

#include <system_error>

#include "protocol/kafka/error_code.h"

namespace sluice::gateway {

/// Maps an error to the code a Kafka broker returns for it: protocol errors (malformed
/// records) and backend errors (by their api meaning, backend/api/errc.h). Anything else maps
/// to UNKNOWN_SERVER_ERROR.
protocol::kafka::error_code to_kafka(std::error_code ec);

}  // namespace sluice::gateway
