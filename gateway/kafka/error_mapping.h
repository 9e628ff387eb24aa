// The one place where module errors become Kafka error codes (STYLE.md section 4).
#pragma once

#include <system_error>

#include "backend/api/common.h"
#include "protocol/kafka/error_code.h"

namespace sluice::gateway {

/// Maps an error to the code a Kafka broker returns for it: protocol errors (malformed
/// records) and backend errors (by their api meaning, backend/api/errc.h). Anything else maps
/// to UNKNOWN_SERVER_ERROR.
protocol::kafka::error_code to_kafka(std::error_code ec);
/// The same for the backend's error shape (its code; the client message is the caller's).
inline protocol::kafka::error_code to_kafka(const backend::api::backend_error& e) {
    return to_kafka(e.code);
}
template <typename E>
    requires std::is_error_code_enum_v<E>
protocol::kafka::error_code to_kafka(E e) {
    return to_kafka(make_error_code(e));
}

}  // namespace sluice::gateway
