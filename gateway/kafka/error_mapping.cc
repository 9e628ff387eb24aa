#include "gateway/kafka/error_mapping.h"

#include "backend/api/errc.h"
#include "protocol/core/errc.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

namespace {

// One exhaustive switch per category, no default: a new errc breaks the build until it is
// mapped here.
kafka::error_code from_backend(backend::api::errc e) {
    using backend::api::errc;
    switch (e) {
        case errc::unknown_topic_or_partition: return kafka::error_code::unknown_topic_or_partition;
        case errc::unknown_topic_id: return kafka::error_code::unknown_topic_id;
        case errc::topic_already_exists: return kafka::error_code::topic_already_exists;
        case errc::invalid_topic_name: return kafka::error_code::invalid_topic_exception;
        case errc::invalid_partitions: return kafka::error_code::invalid_partitions;
        case errc::invalid_config: return kafka::error_code::invalid_config;
        case errc::policy_violation: return kafka::error_code::policy_violation;
        // compat: Kafka refuses client writes to internal topics with INVALID_TOPIC_EXCEPTION.
        case errc::internal_topic: return kafka::error_code::invalid_topic_exception;
        case errc::offset_out_of_range: return kafka::error_code::offset_out_of_range;
        case errc::message_too_large: return kafka::error_code::message_too_large;
        case errc::record_list_too_large: return kafka::error_code::record_list_too_large;
        case errc::corrupt_message: return kafka::error_code::corrupt_message;
        case errc::invalid_record: return kafka::error_code::invalid_record;
        case errc::storage_error: return kafka::error_code::kafka_storage_error;
        case errc::not_leader: return kafka::error_code::not_leader_or_follower;
        case errc::out_of_order_sequence: return kafka::error_code::out_of_order_sequence_number;
        case errc::invalid_producer_epoch: return kafka::error_code::invalid_producer_epoch;
        case errc::invalid_txn_state: return kafka::error_code::invalid_txn_state;
        case errc::transaction_abortable: return kafka::error_code::transaction_abortable;
        case errc::invalid_transaction_timeout:
            return kafka::error_code::invalid_transaction_timeout;
        case errc::concurrent_transactions: return kafka::error_code::concurrent_transactions;
        case errc::producer_fenced: return kafka::error_code::producer_fenced;
        case errc::invalid_producer_id_mapping:
            return kafka::error_code::invalid_producer_id_mapping;
        case errc::transactional_id_not_found:
            return kafka::error_code::transactional_id_not_found;
        // compat: KafkaApis answers transactional records without a transactional id as an
        // authorization failure of that (missing) id.
        case errc::transactional_id_required:
            return kafka::error_code::transactional_id_authorization_failed;
        // compat: Kafka answers COORDINATOR_LOAD_IN_PROGRESS while it replays its state.
        case errc::coordinator_loading: return kafka::error_code::coordinator_load_in_progress;
        case errc::coordinator_not_available: return kafka::error_code::coordinator_not_available;
        case errc::not_coordinator: return kafka::error_code::not_coordinator;
        case errc::invalid_group_id: return kafka::error_code::invalid_group_id;
        case errc::group_id_not_found: return kafka::error_code::group_id_not_found;
        case errc::unknown_member_id: return kafka::error_code::unknown_member_id;
        case errc::member_id_required: return kafka::error_code::member_id_required;
        case errc::illegal_generation: return kafka::error_code::illegal_generation;
        case errc::rebalance_in_progress: return kafka::error_code::rebalance_in_progress;
        case errc::inconsistent_group_protocol:
            return kafka::error_code::inconsistent_group_protocol;
        case errc::invalid_session_timeout: return kafka::error_code::invalid_session_timeout;
        case errc::group_max_size_reached: return kafka::error_code::group_max_size_reached;
        case errc::fenced_instance_id: return kafka::error_code::fenced_instance_id;
        case errc::non_empty_group: return kafka::error_code::non_empty_group;
        case errc::group_subscribed_to_topic: return kafka::error_code::group_subscribed_to_topic;
        case errc::offset_metadata_too_large: return kafka::error_code::offset_metadata_too_large;
        case errc::unsupported_assignor: return kafka::error_code::unsupported_assignor;
        case errc::fenced_member_epoch: return kafka::error_code::fenced_member_epoch;
        case errc::stale_member_epoch: return kafka::error_code::stale_member_epoch;
        case errc::unreleased_instance_id: return kafka::error_code::unreleased_instance_id;
        case errc::unsupported_version: return kafka::error_code::unsupported_version;
        case errc::invalid_regular_expression:
            return kafka::error_code::invalid_regular_expression;
        // compat: GroupMetadataManager.appendGroupMetadataErrorToResponseError maps a record
        // too large to UNKNOWN_SERVER_ERROR (and a storage failure to NOT_COORDINATOR, above).
        case errc::group_state_too_large: return kafka::error_code::unknown_server_error;
        case errc::unstable_offset_commit: return kafka::error_code::unstable_offset_commit;
        // Queue errors come from the SQS interface only; a Kafka request never causes one.
        case errc::queue_does_not_exist: return kafka::error_code::unknown_topic_or_partition;
        case errc::queue_already_exists: return kafka::error_code::topic_already_exists;
        case errc::queue_deleted_recently:
        case errc::invalid_attribute_name:
        case errc::invalid_attribute_value:
        case errc::invalid_parameter_value:
        case errc::missing_parameter:
        case errc::invalid_message_contents:
        case errc::receipt_handle_invalid:
        case errc::message_not_inflight:
        case errc::purge_queue_in_progress:
        case errc::over_limit:
        case errc::resource_not_found:
        case errc::unsupported_operation: return kafka::error_code::invalid_request;
        // A remote backend's (a cluster behind the gateway), answered as a broker would.
        case errc::request_timed_out: return kafka::error_code::request_timed_out;
        // compat: a broker that cannot reach a partition's leader answers LEADER_NOT_AVAILABLE,
        // which clients retry after refreshing metadata.
        case errc::backend_unavailable: return kafka::error_code::leader_not_available;
        // The gateway cannot serve until an operator fixes its own credentials: to the client the
        // broker is not available (not a SASL failure of the client's).
        case errc::backend_authentication_failed: return kafka::error_code::broker_not_available;
        // compat: a broker answers the refused resource's *_AUTHORIZATION_FAILED; topics are what
        // the calls that reach a remote backend's ACLs touch.
        case errc::backend_authorization_failed:
            return kafka::error_code::topic_authorization_failed;
        case errc::invalid_request: return kafka::error_code::invalid_request;
        case errc::unsupported: return kafka::error_code::unsupported_version;
        case errc::unknown: return kafka::error_code::unknown_server_error;
    }
    return kafka::error_code::unknown_server_error;
}

kafka::error_code from_protocol(protocol::errc e) {
    using protocol::errc;
    switch (e) {
        case errc::truncated: return kafka::error_code::corrupt_message;
        case errc::invalid_length: return kafka::error_code::corrupt_message;
        case errc::invalid_varint: return kafka::error_code::corrupt_message;
        case errc::unsupported_version: return kafka::error_code::unsupported_version;
        case errc::unknown_api: return kafka::error_code::invalid_request;
        case errc::invalid_value: return kafka::error_code::corrupt_message;
        case errc::crc_mismatch: return kafka::error_code::corrupt_message;
        case errc::unsupported_compression: return kafka::error_code::unsupported_compression_type;
        case errc::compression_error: return kafka::error_code::corrupt_message;
        case errc::too_large: return kafka::error_code::message_too_large;
        case errc::trailing_bytes: return kafka::error_code::corrupt_message;
    }
    return kafka::error_code::unknown_server_error;
}

}  // namespace

kafka::error_code to_kafka(std::error_code ec) {
    if (!ec) {
        return kafka::error_code::none;
    }
    if (ec.category() == protocol::protocol_category()) {
        return from_protocol(static_cast<protocol::errc>(ec.value()));
    }
    return from_backend(backend::api::reason(ec));
}

}  // namespace sluice::gateway
