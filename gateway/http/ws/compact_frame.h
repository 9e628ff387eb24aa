// The compact records frame of the /ws endpoint (owned by gateway/ws), which a subscription
// asks for with "encoding":"compact" (docs/http.md, "Compact records frames"). It carries the
// same records as the default frame in about half the bytes, and a browser decodes it several
// times faster: topic and partition are written once per run instead of once per record, and
// each field is one array instead of a key in every record object (docs/benchmarks.md).
//
//   {"op":"records","id":<subscription id, if any>,"encoding":"compact","runs":[
//     {"topic":"t","partition":0,"base_offset":40,"base_timestamp":1764700000000,
//      "values":[v0, v1, ...],           every record's value, in the subscription's format
//      "timestamps":[0, 3, ...],         each record's timestamp minus the previous record's
//                                        (the first's minus base_timestamp, so 0)
//      "offsets":[0, 1, 5, ...],         only when the offsets are not consecutive: each
//                                        record's offset minus the previous record's (the
//                                        first's minus base_offset, so 0)
//      "keys":[null, "k", ...],          only when some record of the run has a key
//      "headers":[{}, {"h":"v"}, ...]}]} only when some record of the run has headers; each
//                                        entry is the record's headers object as the default
//                                        frame writes it
//
// A run is a stretch of records of one topic and partition, in delivery order; the records of
// a frame are its runs' records, run after run. Keys, values and header values are written as
// the default frame writes them (stream_format), so a decoder rebuilds exactly the record
// objects {"topic","partition","offset","timestamp","key","value","headers"} of that frame.
//
// Lifecycle: one per subscription, reused frame after frame (start, add..., finish) to keep
// its buffers. Not thread-safe: used on the session's executor only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/http/json.h"
#include "gateway/http/stream_format.h"
#include "protocol/core/ids.h"
#include "protocol/kafka/record.h"

namespace sluice::gateway::ws {

/// How a subscription's records frames are written ("encoding" in the subscribe op).
enum class frame_encoding {
    records,  // the documented default: {"op":"records","records":[{record}, ...]}
    compact,  // runs of columns, above
};

/// "records" or "compact"; nullopt for anything else.
std::optional<frame_encoding> parse_frame_encoding(std::string_view name);

class compact_frame {
public:
    compact_frame() = default;
    compact_frame(const compact_frame&) = delete;
    compact_frame& operator=(const compact_frame&) = delete;

    /// Begins a new frame, dropping what the last one held. `id` is the subscription's id as
    /// raw JSON, or empty for none.
    void start(std::string_view id);

    /// Appends a record: to the open run when it is of the same topic and partition, else in
    /// a new run.
    void add(const topic_name& topic, partition_id partition,
             const protocol::kafka::record_view& r, stream_format format);

    /// Records added since start().
    std::int64_t records() const { return records_; }

    /// Bytes of the frame so far, the open run's columns included (a frame budget's measure).
    std::size_t size() const;

    /// Closes the open run and the frame. The text is valid until the next start().
    std::string_view finish();

private:
    void open_run(const topic_name& topic, partition_id partition,
                  const protocol::kafka::record_view& r);
    void close_run();

    json::writer frame_;  // the frame up to the open run's values, which it writes as they come
    std::int64_t records_ = 0;

    // The open run.
    bool run_open_ = false;
    std::string topic_;
    std::int32_t partition_ = 0;
    std::int64_t count_ = 0;
    std::int64_t last_offset_ = 0;
    std::int64_t last_timestamp_ = 0;
    std::string timestamps_;   // "[0,d1,d2" (closed at the run's end)
    std::string offsets_;      // as timestamps_, once a gap was seen; empty before
    json::writer keys_;        // an open array once a key was seen
    bool any_key_ = false;
    json::writer headers_;     // an open array once headers were seen
    bool any_headers_ = false;
};

}  // namespace sluice::gateway::ws
