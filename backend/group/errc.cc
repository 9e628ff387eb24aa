#include "backend/group/errc.h"

#include <string>

#include "backend/api/errc.h"

namespace sluice::backend::group {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "group"; }
    std::string message(int v) const override {
        switch (static_cast<errc>(v)) {
            case errc::coordinator_loading: return "the group coordinator is loading";
            case errc::coordinator_unavailable: return "the group coordinator is not available";
            case errc::invalid_group_id: return "invalid group id";
            case errc::group_id_not_found: return "group not found";
            case errc::unknown_member_id: return "unknown member id";
            case errc::member_id_required: return "member id required";
            case errc::illegal_generation: return "illegal generation";
            case errc::rebalance_in_progress: return "rebalance in progress";
            case errc::inconsistent_group_protocol: return "inconsistent group protocol";
            case errc::invalid_session_timeout: return "invalid session timeout";
            case errc::group_max_size_reached: return "group max size reached";
            case errc::fenced_instance_id: return "fenced instance id";
            case errc::non_empty_group: return "the group is not empty";
            case errc::group_subscribed_to_topic: return "the group is subscribed to the topic";
            case errc::offset_metadata_too_large: return "offset metadata too large";
            case errc::unknown_topic_or_partition: return "unknown topic or partition";
            case errc::invalid_request: return "invalid request";
            case errc::unsupported_assignor: return "unsupported assignor";
            case errc::fenced_member_epoch: return "fenced member epoch";
            case errc::stale_member_epoch: return "stale member epoch";
            case errc::unreleased_instance_id: return "unreleased instance id";
            case errc::unsupported_version: return "unsupported version";
            case errc::invalid_regular_expression: return "invalid regular expression";
            case errc::record_too_large: return "group record too large";
            case errc::storage_error: return "offsets log storage error";
            case errc::unstable_offset_commit: return "a transaction holds uncommitted offsets";
        }
        return "unknown group error";
    }

    // What each value means to the fronts (backend/api/errc.h): one exhaustive switch.
    std::error_condition default_error_condition(int v) const noexcept override {
        namespace api = backend::api;
        switch (static_cast<errc>(v)) {
            case errc::coordinator_loading:
                return api::make_condition(api::errc::coordinator_loading);
            case errc::coordinator_unavailable:
                return api::make_condition(api::errc::coordinator_not_available);
            case errc::invalid_group_id:
                return api::make_condition(api::errc::invalid_group_id);
            case errc::group_id_not_found:
                return api::make_condition(api::errc::group_id_not_found);
            case errc::unknown_member_id:
                return api::make_condition(api::errc::unknown_member_id);
            case errc::member_id_required:
                return api::make_condition(api::errc::member_id_required);
            case errc::illegal_generation:
                return api::make_condition(api::errc::illegal_generation);
            case errc::rebalance_in_progress:
                return api::make_condition(api::errc::rebalance_in_progress);
            case errc::inconsistent_group_protocol:
                return api::make_condition(api::errc::inconsistent_group_protocol);
            case errc::invalid_session_timeout:
                return api::make_condition(api::errc::invalid_session_timeout);
            case errc::group_max_size_reached:
                return api::make_condition(api::errc::group_max_size_reached);
            case errc::fenced_instance_id:
                return api::make_condition(api::errc::fenced_instance_id);
            case errc::non_empty_group:
                return api::make_condition(api::errc::non_empty_group);
            case errc::group_subscribed_to_topic:
                return api::make_condition(api::errc::group_subscribed_to_topic);
            case errc::offset_metadata_too_large:
                return api::make_condition(api::errc::offset_metadata_too_large);
            case errc::unknown_topic_or_partition:
                return api::make_condition(api::errc::unknown_topic_or_partition);
            case errc::invalid_request:
                return api::make_condition(api::errc::invalid_request);
            case errc::unsupported_assignor:
                return api::make_condition(api::errc::unsupported_assignor);
            case errc::fenced_member_epoch:
                return api::make_condition(api::errc::fenced_member_epoch);
            case errc::stale_member_epoch:
                return api::make_condition(api::errc::stale_member_epoch);
            case errc::unreleased_instance_id:
                return api::make_condition(api::errc::unreleased_instance_id);
            case errc::unsupported_version:
                return api::make_condition(api::errc::unsupported_version);
            case errc::invalid_regular_expression:
                return api::make_condition(api::errc::invalid_regular_expression);
            case errc::record_too_large:
                return api::make_condition(api::errc::group_state_too_large);
            case errc::storage_error:
                return api::make_condition(api::errc::not_coordinator);
            case errc::unstable_offset_commit:
                return api::make_condition(api::errc::unstable_offset_commit);
        }
        return api::make_condition(api::errc::unknown);
    }
};

}  // namespace

const std::error_category& group_category() noexcept {
    static const category c;
    return c;
}

}  // namespace sluice::backend::group
