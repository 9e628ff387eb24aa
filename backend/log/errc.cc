#include "backend/log/errc.h"

#include <string>

#include "backend/api/errc.h"

namespace sluice::backend::log {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "log"; }
    std::string message(int v) const override {
        switch (static_cast<errc>(v)) {
            case errc::unknown_topic_or_partition:
                return "unknown topic or partition";
            case errc::topic_already_exists:
                return "topic already exists";
            case errc::invalid_topic_name:
                return "invalid topic name";
            case errc::invalid_partitions:
                return "invalid number of partitions";
            case errc::invalid_config:
                return "invalid topic configuration";
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
                return "storage I/O error";
            case errc::disk_full:
                return "disk full";
            case errc::log_closed:
                return "log closed";
            case errc::policy_violation:
                return "policy violation";
            case errc::segment_corrupt:
                return "stored segment data is corrupt";
        }
        return "unknown log error";
    }

    // What each value means to the fronts (backend/api/errc.h): one exhaustive switch.
    std::error_condition default_error_condition(int v) const noexcept override {
        namespace api = backend::api;
        switch (static_cast<errc>(v)) {
            case errc::unknown_topic_or_partition:
                return api::make_condition(api::errc::unknown_topic_or_partition);
            case errc::topic_already_exists:
                return api::make_condition(api::errc::topic_already_exists);
            case errc::invalid_topic_name:
                return api::make_condition(api::errc::invalid_topic_name);
            case errc::invalid_partitions:
                return api::make_condition(api::errc::invalid_partitions);
            case errc::invalid_config:
                return api::make_condition(api::errc::invalid_config);
            case errc::offset_out_of_range:
                return api::make_condition(api::errc::offset_out_of_range);
            case errc::message_too_large:
                return api::make_condition(api::errc::message_too_large);
            case errc::record_list_too_large:
                return api::make_condition(api::errc::record_list_too_large);
            case errc::corrupt_message:
                return api::make_condition(api::errc::corrupt_message);
            case errc::invalid_record:
                return api::make_condition(api::errc::invalid_record);
            case errc::storage_error:
                return api::make_condition(api::errc::storage_error);
            case errc::disk_full:
                return api::make_condition(api::errc::storage_error);
            case errc::log_closed:
                return api::make_condition(api::errc::not_leader);
            case errc::policy_violation:
                return api::make_condition(api::errc::policy_violation);
            case errc::segment_corrupt:
                return api::make_condition(api::errc::storage_error);
        }
        return api::make_condition(api::errc::unknown);
    }
};

}  // namespace

const std::error_category& log_category() noexcept {
    static const category c;
    return c;
}

}  // namespace sluice::backend::log
