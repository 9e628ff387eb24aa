// Turning a records field into plain bytes when something must look inside it (down-conversion
// for old Fetch versions, TLS connections): memory chunks are copied, file regions are read with
// pread. Blocking file reads of page-cached segment data; used off the common path only.
#pragma once

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"
#include "protocol/kafka/codec.h"

namespace sluice::gateway {

result<protocol::byte_buffer> read_records_into_memory(const protocol::kafka::records& recs);

}  // namespace sluice::gateway
