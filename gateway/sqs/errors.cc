#include "gateway/sqs/errors.h"

#include "backend/api/errc.h"

namespace sluice::gateway::sqs {
namespace {

sqs_error make(unsigned status, std::string json_type, std::string query_code, bool sender,
               std::string message) {
    return {status, std::move(json_type), std::move(query_code), sender, std::move(message)};
}

sqs_error internal(std::string message) {
    return make(500, "InternalFailure", "InternalFailure", false, std::move(message));
}

}  // namespace

sqs_error request_throttled(std::string message) {
    return make(400, "com.amazonaws.sqs#RequestThrottled", "RequestThrottled", true,
                std::move(message));
}

sqs_error access_denied(std::string message) {
    return make(400, "com.amazon.coral.service#AccessDeniedException", "AccessDenied", true,
                std::move(message));
}

sqs_error to_sqs(front_error e, std::string message) {
    switch (e) {
        case front_error::missing_parameter:
            return make(400, "MissingParameter", "MissingParameter", true, std::move(message));
        case front_error::invalid_parameter_value:
            return make(400, "InvalidParameterValue", "InvalidParameterValue", true, std::move(message));
        case front_error::invalid_action:
            return make(400, "com.amazon.coral.service#UnknownOperationException", "InvalidAction",
                        true, std::move(message));
        case front_error::missing_action:
            return make(400, "com.amazon.coral.service#UnknownOperationException", "MissingAction",
                        true, std::move(message));
        case front_error::malformed_json:
            return make(400, "com.amazon.coral.service#SerializationException",
                        "SerializationException", true, std::move(message));
        case front_error::malformed_query:
            return make(400, "MalformedQueryString", "MalformedQueryString", true, std::move(message));
        case front_error::empty_batch:
            return make(400, "EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest", true,
                        std::move(message));
        case front_error::too_many_entries:
            return make(400, "TooManyEntriesInBatchRequest",
                        "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", true, std::move(message));
        case front_error::ids_not_distinct:
            return make(400, "BatchEntryIdsNotDistinct",
                        "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", true, std::move(message));
        case front_error::invalid_batch_entry_id:
            return make(400, "InvalidBatchEntryId", "AWS.SimpleQueueService.InvalidBatchEntryId",
                        true, std::move(message));
        case front_error::batch_too_long:
            return make(400, "BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong",
                        true, std::move(message));
        case front_error::invalid_address:
            return make(404, "InvalidAddress", "InvalidAddress", true, std::move(message));
        case front_error::unsupported_operation:
            return make(400, "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation",
                        true, std::move(message));
    }
    return internal(std::move(message));
}

sqs_error to_sqs(const backend::api::backend_error& e) {
    using backend::api::errc;
    std::string m = e.text();
    // One exhaustive switch, no default: a new errc breaks the build until it is mapped here.
    switch (backend::api::reason(e.code)) {
        case errc::queue_does_not_exist:
            return make(400, "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", true, m);
        case errc::queue_already_exists:
            return make(400, "QueueNameExists", "QueueAlreadyExists", true, m);
        case errc::queue_deleted_recently:
            return make(400, "QueueDeletedRecently", "AWS.SimpleQueueService.QueueDeletedRecently",
                        true, m);
        case errc::invalid_attribute_name:
            return make(400, "InvalidAttributeName", "InvalidAttributeName", true, m);
        case errc::invalid_attribute_value:
            return make(400, "InvalidAttributeValue", "InvalidAttributeValue", true, m);
        case errc::invalid_parameter_value:
        case errc::message_too_large:
        case errc::record_list_too_large:
        case errc::invalid_request:
            return make(400, "InvalidParameterValue", "InvalidParameterValue", true, m);
        case errc::missing_parameter:
            return make(400, "MissingParameter", "MissingParameter", true, m);
        case errc::invalid_message_contents:
            return make(400, "InvalidMessageContents", "InvalidMessageContents", true, m);
        case errc::receipt_handle_invalid:
            return make(404, "ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", true, m);
        case errc::message_not_inflight:
            return make(400, "MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight", true, m);
        case errc::purge_queue_in_progress:
            return make(403, "PurgeQueueInProgress", "AWS.SimpleQueueService.PurgeQueueInProgress",
                        true, m);
        case errc::over_limit:
            return make(403, "OverLimit", "OverLimit", true, m);
        case errc::resource_not_found:
            return make(404, "ResourceNotFoundException", "ResourceNotFoundException", true, m);
        case errc::unsupported_operation:
        case errc::unsupported:
            return make(400, "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation",
                        true, m);
        // Not a queue's name: SQS answers as for a queue that does not exist.
        case errc::unknown_topic_or_partition:
        case errc::unknown_topic_id:
        case errc::invalid_topic_name:
            return make(400, "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", true, m);
        case errc::topic_already_exists:
            return make(400, "QueueNameExists", "QueueAlreadyExists", true, m);
        case errc::invalid_config:
        case errc::invalid_partitions:
        case errc::policy_violation:
        case errc::internal_topic:
            return make(400, "InvalidParameterValue", "InvalidParameterValue", true, m);
        // The backend is stopping or moving: retry.
        case errc::not_leader:
        case errc::coordinator_loading:
        case errc::coordinator_not_available:
        case errc::not_coordinator:
            return make(503, "ServiceUnavailable", "ServiceUnavailable", false, m);
        // A remote backend's. A timeout or an unreachable cluster is temporary: ServiceUnavailable
        // (503), which the AWS SDKs retry (SQS has no RequestTimeout error). The gateway's own
        // credentials refused is nothing the client can fix: InternalFailure (500). A refusal by
        // the cluster's ACLs is answered as the front's own ACL refusals are.
        case errc::request_timed_out:
        case errc::backend_unavailable:
            return make(503, "ServiceUnavailable", "ServiceUnavailable", false, m);
        case errc::backend_authentication_failed:
            return internal(m);
        case errc::backend_authorization_failed:
            return access_denied(m);
        case errc::storage_error:
        case errc::offset_out_of_range:
        case errc::corrupt_message:
        case errc::invalid_record:
        case errc::out_of_order_sequence:
        case errc::invalid_producer_epoch:
        case errc::invalid_txn_state:
        case errc::transaction_abortable:
        case errc::invalid_transaction_timeout:
        case errc::concurrent_transactions:
        case errc::producer_fenced:
        case errc::invalid_producer_id_mapping:
        case errc::transactional_id_not_found:
        case errc::transactional_id_required:
        case errc::invalid_group_id:
        case errc::group_id_not_found:
        case errc::unknown_member_id:
        case errc::member_id_required:
        case errc::illegal_generation:
        case errc::rebalance_in_progress:
        case errc::inconsistent_group_protocol:
        case errc::invalid_session_timeout:
        case errc::group_max_size_reached:
        case errc::fenced_instance_id:
        case errc::non_empty_group:
        case errc::group_subscribed_to_topic:
        case errc::offset_metadata_too_large:
        case errc::unsupported_assignor:
        case errc::fenced_member_epoch:
        case errc::stale_member_epoch:
        case errc::unreleased_instance_id:
        case errc::unsupported_version:
        case errc::invalid_regular_expression:
        case errc::group_state_too_large:
        case errc::unstable_offset_commit:
        case errc::unknown:
            return internal(m);
    }
    return internal(m);
}

}  // namespace sluice::gateway::sqs
