// Errors of the group coordinator (backend/group): why a membership, offset or admin call on a
// consumer group failed. Most values are the Kafka errors a broker returns for the same cause;
// each one means one backend/api error (errc.cc: default_error_condition).
#pragma once

#include <system_error>

namespace sluice::backend::group {

enum class errc {
    coordinator_loading = 1,     // committed offsets and groups are still being replayed
    coordinator_unavailable,     // the group is being removed (Dead), or the offsets log failed
    invalid_group_id,            // empty group id where one is required
    group_id_not_found,          // no such group (or not of the kind the call needs)
    unknown_member_id,           // the member id (or static instance id) is not in the group
    member_id_required,          // JoinGroup v4+: rejoin with the member id handed out
    illegal_generation,          // the request's generation is not the group's
    rebalance_in_progress,       // the group is rebalancing: rejoin
    inconsistent_group_protocol, // protocol type/name not supported by the group's members
    invalid_session_timeout,     // outside group.min/max.session.timeout.ms
    group_max_size_reached,      // group.max.size (or group.consumer.max.size) members already
    fenced_instance_id,          // a newer member holds this group.instance.id
    non_empty_group,             // the group still has members (DeleteGroups, OffsetDelete)
    group_subscribed_to_topic,   // OffsetDelete on a topic the group consumes
    offset_metadata_too_large,   // committed metadata longer than offset.metadata.max.bytes
    unknown_topic_or_partition,  // commit for a partition that does not exist
    invalid_request,             // a field combination the protocol forbids
    unsupported_assignor,        // KIP-848: server assignor not offered
    fenced_member_epoch,         // KIP-848: member epoch ahead of or unknown to the group
    stale_member_epoch,          // KIP-848: member epoch behind the group's (offset calls)
    unreleased_instance_id,      // KIP-848: the instance id is still held by a live member
    unsupported_version,         // KIP-848 members must commit with OffsetCommit v9+
    invalid_regular_expression,  // KIP-848: the subscribed regex does not compile
    record_too_large,            // group state exceeds the offsets topic's max.message.bytes
    storage_error,               // appending to or syncing the offsets log failed
    unstable_offset_commit,      // require_stable fetch while a transaction holds offsets
};

const std::error_category& group_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), group_category()};
}

}  // namespace sluice::backend::group

template <>
struct std::is_error_code_enum<sluice::backend::group::errc> : std::true_type {};
