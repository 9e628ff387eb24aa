// Errors of the native log (backend/log): what an append, read or admin call can fail with.
// Each value means one backend/api error (errc.cc: default_error_condition).
#pragma once

#include <system_error>

namespace sluice::backend::log {

enum class errc {
    unknown_topic_or_partition = 1,  // no such topic, or the partition index is out of range
    topic_already_exists,            // create_topic for a name that exists
    invalid_topic_name,              // not 1-249 chars of [a-zA-Z0-9._-], or "." or ".."
    invalid_partitions,              // partition count < 1, too many, or not an increase
    invalid_config,                  // unknown topic config key or a value out of range
    offset_out_of_range,             // the offset is outside [log_start_offset, log_end_offset]
    message_too_large,               // a batch exceeds max.message.bytes
    record_list_too_large,           // a batch exceeds segment.bytes (it fits no segment)
    corrupt_message,                 // a batch being appended has a bad CRC, length or magic
    invalid_record,                  // a well-formed batch the log refuses (no records, bad
                                     // offset delta, a control batch from a client)
    storage_error,                   // an I/O call failed (other than running out of space)
    disk_full,                       // the device or quota is full; appends resume with space
    log_closed,                      // the log (or its topic) was closed or deleted
    policy_violation,                // the operation is not allowed (e.g. deleting an internal
                                     // topic)
    segment_corrupt,                 // stored data failed a length/offset/CRC check on read
};

const std::error_category& log_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), log_category()};
}

}  // namespace sluice::backend::log

template <>
struct std::is_error_code_enum<sluice::backend::log::errc> : std::true_type {};
