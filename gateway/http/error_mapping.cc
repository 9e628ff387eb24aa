#include "gateway/http/error_mapping.h"

#include "backend/api/errc.h"
#include "gateway/http/json.h"

namespace sluice::gateway::rest {
namespace api = backend::api;

unsigned http_status(code c) {
    const auto v = static_cast<std::int32_t>(c);
    return static_cast<unsigned>(v >= 10000 ? v / 100 : v);
}

namespace {

/// What a backend error means to a REST client. One exhaustive switch, no default: a new
/// api::errc breaks the build until it is mapped here.
error map(api::errc e, const std::error_code& ec, subject about) {
    using api::errc;
    auto kafka_error = [&] { return error{code::kafka_error, "Kafka error: " + ec.message()}; };
    auto retriable = [&] {
        return error{code::kafka_retriable_error, "Retriable Kafka error: " + ec.message()};
    };
    auto bad_request = [&] { return error{code::kafka_bad_request, ec.message()}; };
    switch (e) {
        case errc::unknown_topic_or_partition:
        case errc::unknown_topic_id:
            if (about == subject::partition) {
                return {code::partition_not_found, std::string(partition_not_found_message)};
            }
            return {code::topic_not_found, std::string(topic_not_found_message)};
        case errc::topic_already_exists:
        case errc::invalid_topic_name:
        case errc::invalid_partitions:
        case errc::invalid_config:
        case errc::policy_violation:
        case errc::invalid_request:
        case errc::invalid_regular_expression:
        case errc::invalid_group_id:
        case errc::invalid_session_timeout:
        case errc::offset_metadata_too_large:
        case errc::unsupported_version:
        case errc::unsupported_assignor:
            return bad_request();
        case errc::internal_topic:
            return {code::forbidden, "clients may not write to an internal topic"};
        case errc::offset_out_of_range:
            return bad_request();
        case errc::group_id_not_found:
            return {code::consumer_group_not_found, "Consumer group id not found."};
        // Retriable: the same call may succeed once the backend has moved on.
        case errc::not_leader:
        case errc::coordinator_loading:
        case errc::coordinator_not_available:
        case errc::not_coordinator:
        case errc::rebalance_in_progress:
        case errc::concurrent_transactions:
        case errc::unstable_offset_commit:
            return retriable();
        // A full disk, or a partition that stopped taking writes after a failed fsync (Kafka's
        // KAFKA_STORAGE_ERROR): 507, retried once space returns or the partition recovers.
        case errc::storage_error:
            return {code::insufficient_storage, "Insufficient storage: " + ec.message()};
        // A remote backend's (compat: rest-utils' KafkaExceptionMapper): a timeout is a retriable
        // Kafka error (500, 50003), an unreachable cluster BrokerNotAvailable (503, 50302), a
        // refused login 401 (40101) and a refused ACL 403 (40301).
        case errc::request_timed_out:
            return retriable();
        case errc::backend_unavailable:
            return {code::broker_not_available, "Broker not available: " + ec.message()};
        case errc::backend_authentication_failed:
            return {code::kafka_authentication_error, "Authentication error: " + ec.message()};
        case errc::backend_authorization_failed:
            return {code::kafka_authorization_error, "Authorization error: " + ec.message()};
        case errc::message_too_large:
        case errc::record_list_too_large:
        case errc::corrupt_message:
        case errc::invalid_record:
        case errc::out_of_order_sequence:
        case errc::invalid_producer_epoch:
        case errc::invalid_txn_state:
        case errc::transaction_abortable:
        case errc::invalid_transaction_timeout:
        case errc::producer_fenced:
        case errc::invalid_producer_id_mapping:
        case errc::transactional_id_not_found:
        case errc::transactional_id_required:
        case errc::unknown_member_id:
        case errc::member_id_required:
        case errc::illegal_generation:
        case errc::inconsistent_group_protocol:
        case errc::group_max_size_reached:
        case errc::fenced_instance_id:
        case errc::non_empty_group:
        case errc::group_subscribed_to_topic:
        case errc::fenced_member_epoch:
        case errc::stale_member_epoch:
        case errc::unreleased_instance_id:
        case errc::group_state_too_large:
        case errc::unsupported:
        case errc::unknown:
            return kafka_error();
        // The queues interface's: no REST call reaches it.
        case errc::queue_does_not_exist:
        case errc::queue_already_exists:
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
        case errc::unsupported_operation:
            return kafka_error();
    }
    return kafka_error();
}

}  // namespace

error from_backend(const std::error_code& ec, subject about) {
    return map(api::reason(ec), ec, about);
}

code produce_error_code(const std::error_code& ec) {
    const code c = from_backend(ec).code;
    if (c == code::broker_not_available) {
        return code::kafka_retriable_error;  // compat: a RetriableException of the producer
    }
    return c == code::kafka_retriable_error || c == code::insufficient_storage ? c
                                                                               : code::kafka_error;
}

http_response error_response(const error& e, std::string_view content_type) {
    json::writer w;
    w.start_object();
    w.key("error_code");
    w.int64(static_cast<std::int64_t>(e.code));
    w.field("message", e.message);
    w.end_object();
    return make_response({http_status(e.code), std::string(content_type), w.str()});
}

}  // namespace sluice::gateway::rest
