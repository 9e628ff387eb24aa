#include "gateway/http/record_producer.h"

#include <fmt/format.h>

#include "gateway/core/logger.h"

namespace sluice::gateway {
namespace api = backend::api;

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

boost::asio::awaitable<std::optional<std::int32_t>> record_producer::find_or_create(
    const topic_name& topic, const producer_identity* who, produce_outcome& out) {
    auto& producer = client_.producer();
    auto count = co_await producer.partitions(topic);
    if (count) {
        co_return *count;
    }
    if (count.error().reason() != api::errc::unknown_topic_or_partition) {
        out.refusal = produce_refusal::create_failed;
        out.create_error = count.error().code;
        co_return std::nullopt;
    }
    if (!creation_.enabled || who == nullptr) {
        out.refusal = produce_refusal::unknown_topic;
        co_return std::nullopt;
    }
    // Kafka's rule: CREATE on the cluster, else CREATE on the topic.
    const auto& chain = who->chain;
    if (chain.authorizing() &&
        !chain.visible(who->who, auth::acl_operation::create, auth::resource_type::cluster,
                       auth::cluster_resource_name) &&
        !chain.visible(who->who, auth::acl_operation::create, auth::resource_type::topic,
                       topic.value)) {
        out.refusal = produce_refusal::create_denied;
        out.denied = acl_check{auth::acl_operation::create, auth::resource_type::topic, topic.value};
        co_return std::nullopt;
    }
    // As auto_create_topic (gateway/policy/topic_auto_create.h) over the client level: the
    // default configs, num.partitions; a topic created meanwhile by someone else is found.
    // A named value: g++ 12 destroys an aggregate temporary argument of a co_await call twice.
    api::new_topic spec{topic, creation_.partitions, {}, false};
    auto created = co_await client_.admin().create_topic(std::move(spec));
    if (created) {
        server_log().info("auto-created topic '{}' with {} partitions for {} {} from {}", topic,
                          creation_.partitions, audit_front_name(who->who.front),
                          who->who.principal, authorizer_host(who->who.peer));
        co_return static_cast<std::int32_t>(created->partitions.size());
    }
    if (auto again = co_await producer.partitions(topic)) {
        co_return *again;  // created concurrently
    }
    out.refusal = produce_refusal::create_failed;
    out.create_error = created.error().code;
    co_return std::nullopt;
}

boost::asio::awaitable<produce_outcome> record_producer::ensure_topic(
    topic_name topic, const producer_identity* who) {
    produce_outcome out;
    if (auto partitions = co_await find_or_create(topic, who, out)) {
        out.partitions = *partitions;
    }
    co_return out;
}

boost::asio::awaitable<produce_outcome> record_producer::produce(
    topic_name topic, std::vector<outgoing_record> records, const producer_identity* who) {
    produce_outcome out;
    auto partitions = co_await find_or_create(topic, who, out);
    if (!partitions) {
        co_return out;
    }
    for (const auto& r : records) {
        if (r.partition && (*r.partition < 0 || *r.partition >= *partitions)) {
            out.refusal = produce_refusal::unknown_partition;
            out.bad_partition = *r.partition;
            co_return out;
        }
    }
    const std::size_t n = records.size();
    api::send_options opts;
    opts.acks = acks_;
    auto sent = co_await client_.producer().send(topic, std::move(records), opts);
    if (!sent) {
        // The topic went away (or shrank) since it was looked up.
        if (sent.error().reason() == api::errc::unknown_topic_or_partition) {
            out.refusal = produce_refusal::unknown_topic;
            co_return out;
        }
        out.records.assign(n, produced_record{sent.error().code, -1, -1, -1});
        co_return out;
    }
    out.records.reserve(sent->size());
    for (const auto& d : *sent) {
        out.records.push_back(produced_record{d.error.code, d.partition, d.offset, d.timestamp});
    }
    co_return out;
}

}  // namespace sluice::gateway
