// The errors of the backend interface (owned by backend/api): why a call on topics, records,
// groups or transactions failed, in words every front can map to its own protocol (Kafka error
// codes in gateway/kafka/error_mapping.cc, HTTP statuses and REST error codes, SQS errors).
//
// A backend may answer with these codes directly, or with codes of its own categories that
// name one of these as their default_error_condition (the native modules do: a log, group or
// producer error keeps its own message, and api::reason() tells what it means). Fronts never
// compare against a backend's own category; they switch on reason(ec).
#pragma once

#include <system_error>

namespace sluice::backend::api {

enum class errc {
    // --- topics and partitions ---------------------------------------------------------------
    unknown_topic_or_partition = 1,  // no such topic, or the partition index is out of range
    unknown_topic_id,                // no topic has this id
    topic_already_exists,            // creating a name that exists
    invalid_topic_name,              // not a legal topic name (or it collides with one)
    invalid_partitions,              // a partition count below 1, too many, or not an increase
    invalid_config,                  // an unknown config key or a value out of range
    policy_violation,                // not allowed here (deleting an internal topic, ...)
    internal_topic,                  // clients may not write to an internal topic

    // --- records -----------------------------------------------------------------------------
    offset_out_of_range,    // the offset is outside [log start, log end]
    message_too_large,      // a batch larger than the topic's max.message.bytes
    record_list_too_large,  // a batch larger than a whole segment (segment.bytes)
    corrupt_message,        // a batch with a bad CRC, length or magic
    invalid_record,         // a well-formed batch that cannot be stored (no records, ...)
    storage_error,          // the storage failed (I/O error, full disk, corrupt data on read)
    not_leader,             // the partition is closed, or its leader moved: refresh metadata, retry

    // --- idempotent producers and transactions ------------------------------------------------
    out_of_order_sequence,        // a batch's first sequence is not the next expected one
    invalid_producer_epoch,       // an epoch older than the partition's (a fenced producer)
    invalid_txn_state,            // the call does not fit the transaction's state
    transaction_abortable,        // the partition is not in the transaction (abort and retry)
    invalid_transaction_timeout,  // above the maximum, or not positive
    concurrent_transactions,      // the transaction is completing: retry
    producer_fenced,              // the transactional id has a newer epoch
    invalid_producer_id_mapping,  // an unknown transactional id, or another producer id
    transactional_id_not_found,   // describing an unknown transactional id
    transactional_id_required,    // transactional records without a transactional id

    // --- coordinators (groups and transactions) ------------------------------------------------
    coordinator_loading,        // the coordinator's state is still being replayed
    coordinator_not_available,  // the coordinator cannot serve now (removed group, failed log)
    not_coordinator,            // the coordinator moved (or its log failed): find it again

    // --- consumer groups ------------------------------------------------------------------------
    invalid_group_id,             // an empty group id where one is required
    group_id_not_found,           // no such group (or not of the kind the call needs)
    unknown_member_id,            // the member (or static instance) is not in the group
    member_id_required,           // rejoin with the member id handed out
    illegal_generation,           // the call's generation is not the group's
    rebalance_in_progress,        // the group is rebalancing: rejoin
    inconsistent_group_protocol,  // protocol type or names unsupported by the group's members
    invalid_session_timeout,      // outside the configured session timeout range
    group_max_size_reached,       // the group is full
    fenced_instance_id,           // a newer member holds this static instance id
    non_empty_group,              // the group still has members
    group_subscribed_to_topic,    // deleting offsets of a topic the group consumes
    offset_metadata_too_large,    // committed metadata over the configured limit
    unsupported_assignor,         // KIP-848: a server assignor that is not offered
    fenced_member_epoch,          // KIP-848: a member epoch ahead of or unknown to the group
    stale_member_epoch,           // KIP-848: a member epoch behind the group's
    unreleased_instance_id,       // KIP-848: the static instance id is held by a live member
    unsupported_version,          // the call's protocol version cannot be served this way
    invalid_regular_expression,   // a client-supplied pattern that does not compile
    group_state_too_large,        // the group's state exceeds what its log can hold
    unstable_offset_commit,       // an open transaction holds offsets the caller asked for

    // --- queues ----------------------------------------------------------------------------------
    queue_does_not_exist,      // no queue (and no topic) of that name
    queue_already_exists,      // creating a queue that exists with other attribute values
    queue_deleted_recently,    // creating a queue within a minute of deleting that name
    invalid_attribute_name,    // an unknown queue attribute, or one that cannot be set
    invalid_attribute_value,   // a queue or message attribute value that is out of range or malformed
    invalid_parameter_value,   // a parameter out of range, malformed, or not allowed on this queue
    missing_parameter,         // a parameter this queue requires (MessageGroupId on a FIFO queue)
    invalid_message_contents,  // a message body with characters outside SQS's allowed set
    receipt_handle_invalid,    // not a receipt handle of this queue, or expired (FIFO)
    message_not_inflight,      // the message of a receipt handle is not in flight
    purge_queue_in_progress,   // the queue was purged in the last minute
    over_limit,                // a quota: messages in flight, tags, permission statements
    resource_not_found,        // no such message move task, or no such queue by ARN
    unsupported_operation,     // not possible on this queue now (a second move task, ...)

    // --- a remote backend (a cluster behind the gateway); the native backend never answers these --
    // A leader or coordinator that moved is not_leader or not_coordinator (above).
    request_timed_out,              // no answer in time: the call may or may not have taken effect
    backend_unavailable,            // the cluster cannot be reached (calls on groups and
                                    // transactions answer coordinator_not_available instead)
    backend_authentication_failed,  // the cluster refused the gateway's own credentials
    backend_authorization_failed,   // the cluster's ACLs refused the gateway this operation

    // --- everything else ------------------------------------------------------------------------
    invalid_request,  // a combination of arguments the interface forbids
    unsupported,      // this backend cannot do this
    unknown,          // an error of no known meaning (a bug, or a category without a mapping)
};

const std::error_category& api_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), api_category()};
}

/// A condition of the api category, for a backend category's default_error_condition().
inline std::error_condition make_condition(errc e) noexcept {
    return {static_cast<int>(e), api_category()};
}

/// What `ec` means in api terms: its own value for api codes, its default_error_condition for
/// a backend's own categories, errc::unknown otherwise. `ec` must be an error (not empty).
errc reason(const std::error_code& ec) noexcept;

}  // namespace sluice::backend::api

template <>
struct std::is_error_code_enum<sluice::backend::api::errc> : std::true_type {};
