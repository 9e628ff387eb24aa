// Reading records for the native client level's consumer (owned by backend/client): one
// api::records::fetch from a set of positions, then the records of the answer decoded one by
// one, from each position on (a fetch returns whole batches, which may begin before it),
// control batches skipped (read_committed: aborted transactions' batches too), compressed
// batches inflated with a bound.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <system_error>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "backend/api/records.h"
#include "protocol/core/ids.h"
#include "protocol/kafka/record.h"

namespace sluice::backend::client {

/// Where reading a partition continues.
struct read_position {
    topic_name topic;
    partition_id partition;
    offset next{0};
};

/// How one partition of a read went.
struct partition_read {
    std::error_code error;      // offset_out_of_range, unknown_topic_or_partition, ...
    offset next{0};             // the position after the last record handed to the sink
    offset high_watermark{-1};
    offset log_start{-1};
};

struct read_limits {
    std::chrono::milliseconds max_wait{0};
    std::int32_t min_bytes = 1;
    std::int64_t max_bytes = 1024 * 1024;   // of the fetch answer (whole batches)
    std::int32_t partition_max_bytes = 1024 * 1024;
    backend::api::isolation isolation = backend::api::isolation::read_uncommitted;
};

/// Gets each record in order, with the index of its position in the call; returns false to
/// stop (the record is then not counted: the next read starts at it).
using record_sink = std::function<bool(std::size_t position, const protocol::kafka::record_view&)>;

/// The most bytes one compressed batch may inflate to.
inline constexpr std::size_t max_decompressed_batch = 64 * 1024 * 1024;

/// Fetches from `positions` (parking up to limits.max_wait for min_bytes) and hands every
/// record at or after its position to `sink`. One answer per position, in order.
boost::asio::awaitable<std::vector<partition_read>> read_records(
    backend::api::records& records, const std::vector<read_position>& positions,
    read_limits limits, const record_sink& sink);

}  // namespace sluice::backend::client
