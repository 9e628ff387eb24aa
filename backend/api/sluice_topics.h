// The topics sluice keeps its own state in (owned by backend/api, so that every front and the
// queue service agree on them): the internal topics of the backend's modules and every topic
// whose name starts with "_sluice" (the HTTP front's _sluice_rest_consumers, and any later one).
//
// None of them is a queue on any front (SQS, the console's /v1/queues); none is deleted or
// trimmed by a client (Kafka DeleteTopics and DeleteRecords refuse them); only the module that
// owns one writes it. They are still readable by Kafka clients with the rights to, as Kafka's
// internal topics are.
#pragma once

#include <array>
#include <string_view>

namespace sluice::backend::api {

/// The internal topics of the native backend: committed offsets and group state, transaction
/// state, queue state. A backend marks them `topic_description::internal`; the names count even
/// before the topic exists (a client must not create one first).
inline constexpr std::array<std::string_view, 3> internal_topic_names = {
    "__consumer_offsets", "__transaction_state", "__queue_state"};

/// The prefix of the topics the fronts keep their own state in.
inline constexpr std::string_view sluice_topic_prefix = "_sluice";

/// True for a topic of sluice's own state (internal or "_sluice*"): see above.
inline bool is_sluice_owned_topic(std::string_view name) {
    if (name.starts_with(sluice_topic_prefix)) {
        return true;
    }
    for (auto n : internal_topic_names) {
        if (name == n) {
            return true;
        }
    }
    return false;
}

}  // namespace sluice::backend::api
