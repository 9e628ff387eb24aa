// A live read of topics for a browser stream (WebSocket subscribe, SSE events; owned by
// gateway/http), over one api::consumer of the client level: either every partition of the
// topics from a starting point (manual assignment), or, with a group, the partitions the group
// gives the consumer, resuming at the group's committed offsets ("from" then applies only where
// nothing is committed, as Kafka's auto.offset.reset does).
//
//   open(): topics exist? --> consumer: assign + seek | subscribe  --> poll(): consumer.poll
//                                                                       ^          |
//                                                                       +----------+
//
// Lifecycle: open() builds it; the owner calls poll() in a loop and close() at the end (the
// consumer leaves the group). Concurrency: poll(), positions() and commit() are called from
// the owner's executor only, one at a time; the consumer's group work runs on its executor.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "gateway/http/error_mapping.h"
#include "gateway/httpcore/async_event.h"

#include "backend/api/client.h"

namespace sluice::gateway {

/// Where a subscription starts reading a partition that has no committed offset.
struct start_position {
    enum class kind { earliest, latest, offset, timestamp };
    kind what = kind::latest;
    std::int64_t value = 0;  // the offset, or milliseconds since the epoch
};

using partition_key = std::pair<topic_name, partition_id>;

/// Gets each record with its topic and partition; returns false to stop before it.
using stream_sink = backend::api::message_sink;

class topic_subscription {
public:
    struct services {
        backend::api::client& client;
        std::int32_t session_timeout_ms = 30000;
    };
    struct spec {
        std::vector<topic_name> topics;
        std::optional<sluice::group_id> group;
        start_position from;
        /// Positions to resume at (SSE's Last-Event-ID): they win over commits and `from`.
        std::map<partition_key, std::int64_t> resume;
        backend::api::client_info client;
    };

    /// Checks that every topic exists (40401 otherwise) and, without a group, resolves every
    /// partition's starting offset. `consumer_executor` runs the consumer's group work.
    static boost::asio::awaitable<std::variant<std::unique_ptr<topic_subscription>, rest::error>>
    open(services svc, spec s, boost::asio::any_io_executor consumer_executor);

    ~topic_subscription();

    /// Hands the records available now (or within limits.max_wait) to `sink`. Returns an error
    /// only for failures the client should hear about.
    boost::asio::awaitable<std::optional<rest::error>> poll(const stream_sink& sink,
                                                            backend::api::poll_limits limits);

    /// The next offset of every partition read so far.
    const std::map<partition_key, std::int64_t>& positions() const { return positions_; }
    bool has_group() const { return spec_.group.has_value(); }
    /// With a group: commits every held partition's position; the committed offsets.
    boost::asio::awaitable<std::variant<std::map<partition_key, std::int64_t>, rest::error>>
    commit();
    /// Ends the consumer (leaving the group).
    void close();

private:
    topic_subscription(spec s, std::shared_ptr<backend::api::consumer> consumer,
                       backend::api::client& client)
        : spec_(std::move(s)), consumer_(std::move(consumer)), client_(&client) {}

    /// A failure of the read as the client hears it: a partition that is unknown or without a
    /// leader whose topic no longer exists (deleted while read: the native log answers "log
    /// closed", librdkafka an unknown partition) is "topic not found" naming the topic, as
    /// open() answers; anything else is `e` as it is.
    boost::asio::awaitable<rest::error> failure(const backend::api::backend_error& e,
                                                std::vector<topic_name> topics);

    /// Sets the positions of `parts` (held, without one): resume, else `from`.
    boost::asio::awaitable<std::optional<rest::error>> start_at(
        const std::vector<backend::api::topic_partition>& parts, bool use_resume);
    /// With a group, on a new assignment: the first topic this member held partitions of,
    /// holds none of in `assigned`, and that no longer exists (40401), if any.
    boost::asio::awaitable<std::optional<rest::error>> topic_deleted_from(
        const std::vector<backend::api::topic_partition>& assigned);
    /// Seeks `parts` to `from`.
    boost::asio::awaitable<std::optional<rest::error>> start_from(
        std::vector<backend::api::topic_partition> parts);

    spec spec_;
    std::shared_ptr<backend::api::consumer> consumer_;
    backend::api::client* client_;  // the services' client, which outlives the subscription
    /// Notified by the consumer's on_change (a group's assignment).
    std::shared_ptr<async_event> changed_ = std::make_shared<async_event>();
    std::int32_t held_generation_ = -2;
    std::map<partition_key, std::int64_t> positions_;
};

}  // namespace sluice::gateway
