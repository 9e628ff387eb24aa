// A REST Proxy v2 consumer instance (owned by gateway/http/rest): what POST /consumers/{group}
// creates, over one api::consumer of the client level (so the same instance runs over a Kafka
// cluster). It is a real member of its consumer group (static membership), or reads partitions
// assigned by hand; the consumer keeps a position per partition (stored, committed, or
// auto.offset.reset), reads with a long poll that parks in the backend (never on an io
// thread), commits what it consumed; the instance can be stored (consumer_store) so that it
// survives a restart of sluice.
//
//   POST subscription --> consumer.subscribe (join, sync, heartbeat) --> assigned partitions
//   POST assignments  --> consumer.assign --------------------------> assigned partitions
//   GET records: consumer.poll (long poll) --> JSON --> positions advance (and are stored)
//
// Lifecycle: created by the consumer_registry (or restored by it at start-up); stop() closes
// the consumer (leaving the group when the instance is deleted or expires, not at shutdown, so
// that the restarted instance keeps its partitions). Concurrency: every method is thread-safe;
// state is guarded by one mutex held only across non-suspending code; reads of one instance
// run one at a time, in arrival order.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "gateway/httpcore/async_event.h"
#include "gateway/http/error_mapping.h"
#include "gateway/http/rest/media_type.h"
#include "gateway/http/rest/rest_support.h"

#include "backend/api/client.h"

namespace sluice::gateway::rest {

using topic_partition = backend::api::topic_partition;

enum class offset_reset { earliest, latest, none };

/// What POST /consumers/{group} configures.
struct instance_config {
    media format = media::binary;  // binary or json
    offset_reset auto_offset_reset = offset_reset::latest;
    bool auto_commit = true;
    std::optional<std::int32_t> fetch_min_bytes;
    std::optional<std::chrono::milliseconds> request_timeout;
};

/// An instance as consumer_store keeps it.
struct stored_instance {
    sluice::group_id group;
    std::string name;
    instance_config config;
    std::vector<topic_name> topics;     // subscribed topics
    std::optional<std::string> pattern;  // or a subscribed pattern
    /// Who subscribed to the pattern, and from where: it matches only the topics this
    /// principal may DESCRIBE. Empty in records of older versions (then User:ANONYMOUS).
    std::string pattern_principal;
    std::string pattern_host;
    std::vector<topic_partition> assigned;  // or partitions assigned by hand
    std::map<topic_partition, std::int64_t> positions;
    /// The gateway process serving the instance (set by the registry when it stores it; empty
    /// in records of older versions).
    std::string owner;
};

class consumer_instance : public std::enable_shared_from_this<consumer_instance> {
public:
    consumer_instance(rest_context& rc, boost::asio::any_io_executor ex, sluice::group_id group,
                      std::string name, instance_config config);
    ~consumer_instance();

    const sluice::group_id& group() const { return group_; }
    const std::string& name() const { return name_; }
    const instance_config& config() const { return config_; }

    // --- subscription and assignment (errors are REST errors, empty on success) -----------
    std::optional<error> subscribe(std::vector<topic_name> topics);
    /// A pattern matches only the topics `principal` (from `host`) may DESCRIBE, now and at
    /// every later look at the topics, as a Kafka consumer's Metadata shows it only those.
    std::optional<error> subscribe_pattern(const std::string& pattern, std::string principal,
                                           std::string host);
    void unsubscribe();
    /// The subscribed topics (for a pattern: the topics it matches now).
    std::vector<std::string> subscription() const;
    std::optional<error> assign(std::vector<topic_partition> partitions);
    std::vector<topic_partition> assignment() const;

    // --- positions -------------------------------------------------------------------------
    std::optional<error> seek(const std::vector<std::pair<topic_partition, std::int64_t>>& to);
    enum class seek_kind { beginning, end };
    boost::asio::awaitable<std::optional<error>> seek_to(std::vector<topic_partition> parts,
                                                         seek_kind kind);
    boost::asio::awaitable<std::optional<error>> seek_to_time(
        std::vector<std::pair<topic_partition, std::int64_t>> times);

    // --- reading and committing --------------------------------------------------------------
    /// A JSON array of records (the answer body), or the error. `timeout` <= 0: the instance's
    /// request timeout; `max_bytes` <= 0: consumer.request.max.bytes.
    boost::asio::awaitable<std::variant<std::string, error>> read(
        std::chrono::milliseconds timeout, std::int64_t max_bytes);

    struct commit_entry {
        topic_partition tp;
        std::int64_t offset = 0;  // the last consumed offset: offset + 1 is committed
        std::optional<std::string> metadata;
    };
    /// Commits `entries`, or with nullopt every assigned partition's position. The answer
    /// lists {topic, partition, consumed, committed}.
    boost::asio::awaitable<std::variant<std::string, error>> commit(
        std::optional<std::vector<commit_entry>> entries);
    /// {"offsets":[{topic, partition, offset, metadata}]} for the partitions with a commit.
    boost::asio::awaitable<std::variant<std::string, error>> committed(
        std::vector<topic_partition> parts);

    // --- lifecycle ---------------------------------------------------------------------------
    void touch();
    bool expired(std::chrono::steady_clock::time_point now) const;
    /// Closes the consumer; `leave` as for api::consumer::close.
    void stop(bool leave);
    bool done() const;

    stored_instance to_stored() const;
    /// Puts a stored state back (after a restart): subscription, assignment, positions (used
    /// for the partitions the first assignment gives back).
    void restore(const stored_instance& s);

    /// Stores the instance's state now (after a subscription, assignment or seek change).
    boost::asio::awaitable<void> save();
    /// Called (with the instance's state) after every change worth storing.
    void set_persist(std::function<boost::asio::awaitable<void>(stored_instance)> persist) {
        persist_ = std::move(persist);
    }

private:
    /// What the instance reads now; `member`: from the group (empty while it rebalances).
    struct held_partitions {
        bool stable = true;
        bool member = false;
        std::vector<topic_partition> parts;
    };

    held_partitions held() const;
    /// The DESCRIBE check of a pattern subscription's topics (null with the authorizer off).
    backend::api::topic_filter describe_filter(std::string principal, std::string host) const;
    /// The consumer's revoke hook: commits what was consumed (auto.commit).
    boost::asio::awaitable<void> commit_held(const backend::api::assignment_state& held);
    /// Positions stored before a restart, for the partitions of the first assignment after it.
    void apply_restored(const held_partitions& h);
    /// A seek of the client's wins over the stored position of that partition.
    void forget_restored(const topic_partition& tp);
    std::chrono::milliseconds request_timeout() const;

    rest_context& rc_;
    const sluice::group_id group_;
    const std::string name_;
    const instance_config config_;
    std::shared_ptr<backend::api::consumer> consumer_;
    std::function<boost::asio::awaitable<void>(stored_instance)> persist_;
    /// Notified by the consumer's on_change (a group's assignment).
    std::shared_ptr<async_event> changed_ = std::make_shared<async_event>();

    mutable std::mutex mu_;
    bool subscribed_ = false;  // the consumer has been a group member
    std::vector<topic_partition> manual_;
    std::map<topic_partition, std::int64_t> restored_;
    std::string pattern_principal_;  // who subscribed to the pattern, from where
    std::string pattern_host_;
    std::chrono::steady_clock::time_point last_used_;
    bool reading_ = false;
    bool stopped_ = false;
    async_event read_done_;
};

/// The member's static instance id for a REST instance name.
std::string rest_instance_id(const std::string& name);

}  // namespace sluice::gateway::rest
