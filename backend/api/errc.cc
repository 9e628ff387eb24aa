#include "backend/api/errc.h"

#include <string>

namespace sluice::backend::api {
namespace {

class category final : public std::error_category {
  public:
    const char* name() const noexcept override { return "backend"; }
    std::string message(int v) const override {
        switch (static_cast<errc>(v)) {
            case errc::unknown_topic_or_partition:
                return "unknown topic or partition";
            case errc::unknown_topic_id:
                return "unknown topic id";
            case errc::topic_already_exists:
                return "topic already exists";
            case errc::invalid_topic_name:
                return "invalid topic name";
            case errc::invalid_partitions:
                return "invalid number of partitions";
            case errc::invalid_config:
                return "invalid configuration";
            case errc::policy_violation:
                return "policy violation";
            case errc::internal_topic:
                return "clients may not write to an internal topic";
            case errc::offset_out_of_range:
                return "offset out of range";
            case errc::message_too_large:
                return "record batch too large";
            case errc::record_list_too_large:
                return "record batch larger than a segment";
            case errc::corrupt_message:
                return "corrupt record batch";
            case errc::invalid_record:
                return "invalid record batch";
            case errc::storage_error:
                return "storage error";
            case errc::not_leader:
                return "partition not available here";
            case errc::out_of_order_sequence:
                return "out of order sequence number";
            case errc::invalid_producer_epoch:
                return "invalid producer epoch";
            case errc::invalid_txn_state:
                return "invalid transaction state";
            case errc::transaction_abortable:
                return "transaction must be aborted";
            case errc::invalid_transaction_timeout:
                return "invalid transaction timeout";
            case errc::concurrent_transactions:
                return "transaction is completing";
            case errc::producer_fenced:
                return "producer fenced";
            case errc::invalid_producer_id_mapping:
                return "invalid producer id mapping";
            case errc::transactional_id_not_found:
                return "transactional id not found";
            case errc::transactional_id_required:
                return "transactional records need a transactional id";
            case errc::coordinator_loading:
                return "coordinator is loading";
            case errc::coordinator_not_available:
                return "coordinator not available";
            case errc::not_coordinator:
                return "not the coordinator";
            case errc::invalid_group_id:
                return "invalid group id";
            case errc::group_id_not_found:
                return "group not found";
            case errc::unknown_member_id:
                return "unknown member id";
            case errc::member_id_required:
                return "member id required";
            case errc::illegal_generation:
                return "illegal generation";
            case errc::rebalance_in_progress:
                return "rebalance in progress";
            case errc::inconsistent_group_protocol:
                return "inconsistent group protocol";
            case errc::invalid_session_timeout:
                return "invalid session timeout";
            case errc::group_max_size_reached:
                return "group is full";
            case errc::fenced_instance_id:
                return "fenced instance id";
            case errc::non_empty_group:
                return "group is not empty";
            case errc::group_subscribed_to_topic:
                return "group is subscribed to the topic";
            case errc::offset_metadata_too_large:
                return "offset metadata too large";
            case errc::unsupported_assignor:
                return "unsupported assignor";
            case errc::fenced_member_epoch:
                return "fenced member epoch";
            case errc::stale_member_epoch:
                return "stale member epoch";
            case errc::unreleased_instance_id:
                return "instance id not released";
            case errc::unsupported_version:
                return "unsupported version";
            case errc::invalid_regular_expression:
                return "invalid regular expression";
            case errc::group_state_too_large:
                return "group state too large";
            case errc::unstable_offset_commit:
                return "offsets held by an open transaction";
            case errc::queue_does_not_exist:
                return "the specified queue does not exist";
            case errc::queue_already_exists:
                return "a queue with this name exists with other attributes";
            case errc::queue_deleted_recently:
                return "a queue of this name was deleted less than a minute ago";
            case errc::invalid_attribute_name:
                return "invalid attribute name";
            case errc::invalid_attribute_value:
                return "invalid attribute value";
            case errc::invalid_parameter_value:
                return "invalid parameter value";
            case errc::missing_parameter:
                return "a required parameter is missing";
            case errc::invalid_message_contents:
                return "the message contains characters outside the allowed set";
            case errc::receipt_handle_invalid:
                return "the receipt handle is not valid";
            case errc::message_not_inflight:
                return "the message is not in flight";
            case errc::purge_queue_in_progress:
                return "the queue was purged less than a minute ago";
            case errc::over_limit:
                return "a limit was reached";
            case errc::resource_not_found:
                return "the resource does not exist";
            case errc::unsupported_operation:
                return "the operation is not supported here";
            case errc::request_timed_out:
                return "the backend did not answer in time";
            case errc::backend_unavailable:
                return "the backend is not available";
            case errc::backend_authentication_failed:
                return "the backend refused the gateway's credentials";
            case errc::backend_authorization_failed:
                return "the backend refused the gateway this operation";
            case errc::invalid_request:
                return "invalid request";
            case errc::unsupported:
                return "not supported by this backend";
            case errc::unknown:
                return "unknown backend error";
        }
        return "unknown backend error";
    }
};

}  // namespace

const std::error_category& api_category() noexcept {
    static const category c;
    return c;
}

errc reason(const std::error_code& ec) noexcept {
    if (ec.category() == api_category()) {
        return static_cast<errc>(ec.value());
    }
    const std::error_condition cond = ec.default_error_condition();
    if (cond.category() == api_category()) {
        return static_cast<errc>(cond.value());
    }
    return errc::unknown;
}

}  // namespace sluice::backend::api
