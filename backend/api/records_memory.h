// Reading fetched records into memory, for the fronts (and backends) that must look inside them
// (HTTP and WebSocket delivery, SQS, down-conversion for old Kafka fetches): memory chunks are
// copied, file regions are read with pread (owned by backend/api: file regions are part of the
// records contract). Blocking reads of page-cached segment data; off the common Kafka path.
#pragma once

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"
#include "protocol/kafka/codec.h"

namespace sluice::backend::api {

/// The bytes of `recs` in one buffer. Errors: the pread error of a file region (EIO when the
/// file ended early).
result<protocol::byte_buffer> read_records_into_memory(const protocol::kafka::records& recs);

}  // namespace sluice::backend::api
