#include "backend/group/consumer_protocol.h"

namespace sluice::backend::group {

std::optional<std::vector<std::string>> parse_subscription_topics(protocol::bytes_view metadata) {
    protocol::reader r(metadata);
    const std::int16_t version = r.i16();
    const std::int64_t count = r.array_length(false, 2);
    if (!r.ok() || version < 0 || count < 0) {
        return std::nullopt;
    }
    std::vector<std::string> topics;
    topics.reserve(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
        topics.push_back(r.string(false));
    }
    if (!r.ok()) {
        return std::nullopt;
    }
    return topics;
}

std::optional<std::map<std::string, std::vector<std::int32_t>>> parse_assignment(
    protocol::bytes_view assignment) {
    std::map<std::string, std::vector<std::int32_t>> out;
    if (assignment.empty()) {
        return out;  // an empty assignment (a member without partitions)
    }
    protocol::reader r(assignment);
    const std::int16_t version = r.i16();
    const std::int64_t topics = r.array_length(false, 6);
    if (!r.ok() || version < 0 || topics < 0) {
        return std::nullopt;
    }
    for (std::int64_t i = 0; i < topics && r.ok(); ++i) {
        std::string topic = r.string(false);
        const std::int64_t parts = r.array_length(false, 4);
        if (parts < 0) {
            return std::nullopt;
        }
        auto& list = out[topic];
        for (std::int64_t p = 0; p < parts; ++p) {
            list.push_back(r.i32());
        }
    }
    if (!r.ok()) {
        return std::nullopt;
    }
    return out;
}

}  // namespace sluice::backend::group
