// A live read of topics for a browser stream (WebSocket subscribe, SSE events; owned by
// gateway/http): either every partition of the topics from a starting point, or, with a group,
// the partitions a group_member holds, resuming at the group's committed offsets ("from" then
// applies only where nothing is committed, as Kafka's auto.offset.reset does).
//
//   open(): topics exist? --> [group: member joins]  --> poll(): positions --> read_records
//                                                          ^                      |
//                                                          +------ advance -------+
//
// Lifecycle: open() builds it; the owner calls poll() in a loop and close() at the end (the
// member leaves the group). Concurrency: poll(), positions() and commit() are called from the
// owner's executor only, one at a time; the member runs on its own strand.
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
#include "gateway/http/group_member.h"
#include "gateway/http/record_reader.h"

#include "backend/api/groups.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"

namespace sluice::gateway {

/// Where a subscription starts reading a partition that has no committed offset.
struct start_position {
    enum class kind { earliest, latest, offset, timestamp };
    kind what = kind::latest;
    std::int64_t value = 0;  // the offset, or milliseconds since the epoch
};

using partition_key = std::pair<topic_name, partition_id>;

/// Gets each record with its topic and partition; returns false to stop before it.
using stream_sink =
    std::function<bool(const topic_name&, partition_id, const protocol::kafka::record_view&)>;

class topic_subscription {
public:
    struct services {
        backend::api::topics& topics;
        backend::api::records& records;
        backend::api::groups& groups;
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
    /// partition's starting offset. `member_executor` runs the group member.
    static boost::asio::awaitable<std::variant<std::unique_ptr<topic_subscription>, rest::error>>
    open(services svc, spec s, boost::asio::any_io_executor member_executor);

    ~topic_subscription();

    /// Hands the records available now (or within limits.max_wait) to `sink`. Returns an error
    /// only for failures the client should hear about.
    boost::asio::awaitable<std::optional<rest::error>> poll(const stream_sink& sink,
                                                            read_limits limits);

    /// The next offset of every partition read so far.
    const std::map<partition_key, std::int64_t>& positions() const { return positions_; }
    bool has_group() const { return member_ != nullptr; }
    /// With a group: commits every held partition's position; the committed offsets.
    boost::asio::awaitable<std::variant<std::map<partition_key, std::int64_t>, rest::error>>
    commit();
    /// Ends the group membership (leaving the group).
    void close();
    /// Changes of the member's assignment (for waiting owners).
    async_event* member_changed() { return member_ ? &member_->changed() : nullptr; }

private:
    explicit topic_subscription(services svc, spec s) : svc_(svc), spec_(std::move(s)) {}

    boost::asio::awaitable<std::optional<rest::error>> resolve(
        const std::vector<partition_key>& parts, bool use_commits);

    services svc_;
    spec spec_;
    std::shared_ptr<group_member> member_;
    std::vector<partition_key> held_;  // what is read now
    std::int32_t held_generation_ = -2;
    std::map<partition_key, std::int64_t> positions_;
};

}  // namespace sluice::gateway
