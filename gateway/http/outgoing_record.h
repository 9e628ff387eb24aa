// A record as the HTTP fronts hand it to the producer (owned by gateway/http): what a REST or
// WebSocket client sent, decoded. Plain values, apart from record_producer.h so that the code
// that reads request bodies needs nothing of the server.
#pragma once

#include "backend/api/outgoing_record.h"

namespace sluice::gateway {

/// One record to produce: bytes (already decoded from base64 or serialized JSON); the client
/// level's own record (backend/api/outgoing_record.h), so that it goes to api::producer as it is.
using outgoing_record = backend::api::outgoing_record;

}  // namespace sluice::gateway
