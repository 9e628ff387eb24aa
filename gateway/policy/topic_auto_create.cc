#include "gateway/policy/topic_auto_create.h"

#include "gateway/core/logger.h"

namespace sluice::gateway {
namespace api = backend::api;

boost::asio::awaitable<api::backend_result<api::topic_description>> auto_create_topic(
    api::topics& topics, topic_name name, std::int32_t partitions, std::string who) {
    // A named value: g++ 12 destroys an aggregate temporary argument of a co_await call twice.
    api::new_topic spec{name, partitions, {}, false};
    auto created = co_await topics.create(std::move(spec));
    if (created) {
        server_log().info("auto-created topic '{}' with {} partitions for {}", name, partitions,
                          who);
        co_return std::move(created->topic);
    }
    if (auto found = co_await topics.describe(name)) {
        co_return std::move(*found);  // created concurrently
    }
    co_return std::unexpected(created.error());
}

}  // namespace sluice::gateway
