// A member of a classic consumer group, the group side of the native client level's consumer
// (owned by backend/client; broker_consumer runs one per consumer that subscribes). It speaks
// the group protocol through api::groups exactly as a Kafka consumer does (JoinGroup with the
// "consumer" protocol type offering range and roundrobin, SyncGroup, Heartbeat, LeaveGroup),
// so it shares a group's partitions with Kafka consumers: either may lead.
//
//        subscribe()/unsubscribe()                        assignment()  (any thread)
//                 |                                            ^
//                 v                                            |
//   run():  [no subscription] --> join --> (leader: assign) --> sync --> stable --heartbeat--+
//                ^                  ^                                                        |
//                |                  +---- rebalance / subscription or topic change ----------+
//                +-- unsubscribe (leave)                               stop(): leave or not
//
// Lifecycle: created with make_shared, start() spawns run() on the member's strand; stop()
// asks it to end (leaving the group, or not: a static member that should keep its partitions
// across a restart of sluice does not leave); done() tells when run() has returned. The owner
// keeps the member alive until then (run() holds a reference itself).
// Concurrency: run() and the hooks execute on the member's strand; subscribe, unsubscribe,
// assignment and stop are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "backend/api/groups.h"
#include "backend/api/topics.h"
#include "protocol/core/ids.h"

namespace re2 {
class RE2;
}

namespace sluice::backend::client {

/// Topic -> partitions of one member.
using member_assignment = std::map<topic_name, std::vector<partition_id>>;

class group_member : public std::enable_shared_from_this<group_member> {
public:
    struct options {
        sluice::group_id group;
        /// Static membership: the member keeps its partitions across a rejoin with a new member
        /// id (a REST instance restored after a restart of sluice).
        std::optional<std::string> instance_id;
        std::int32_t session_timeout_ms = 30000;
        backend::api::client_info client;
    };

    /// What the member holds now. `stable` is false while the group rebalances; partitions
    /// then belong to no one until the next assignment.
    struct state {
        bool stable = false;
        std::int32_t generation = -1;
        std::string member_id;
        member_assignment partitions;
        /// The subscription the assignment was computed for (resolved topic names).
        std::vector<topic_name> topics;
    };

    /// Runs on the member's strand before the member gives its partitions up (a rebalance, a
    /// new subscription, stop): where the owner commits what was consumed while the generation
    /// is still valid.
    using revoke_hook = std::function<boost::asio::awaitable<void>(const state& held)>;

    group_member(backend::api::groups& groups, backend::api::topics& topics,
                 boost::asio::any_io_executor ex, options opts);
    ~group_member();

    void set_revoke_hook(revoke_hook hook) { revoke_ = std::move(hook); }

    void start();
    /// Subscribes to these topics (replacing the subscription); the member rejoins.
    void subscribe(std::vector<topic_name> topics);
    /// Which topics a pattern may match: those the subscriber may DESCRIBE, as a Kafka
    /// consumer's Metadata shows it only those. Null: every topic.
    using topic_filter = std::function<bool(const topic_name&)>;
    /// Subscribes to every topic whose whole name matches the RE2 pattern and that `filter`
    /// lets through (both checked again every metadata interval, so a topic created later is
    /// matched, or not, as one that was there). Returns false when the pattern does not compile.
    bool subscribe_pattern(const std::string& pattern, topic_filter filter = nullptr);
    void unsubscribe();
    void stop(bool leave);

    state snapshot() const;
    /// The subscription as the client gave it: topics or the pattern.
    std::vector<topic_name> subscribed_topics() const;
    std::optional<std::string> subscribed_pattern() const;
    bool done() const { return done_.load(); }

    /// Called (on the member's strand) whenever the state changes (assignment, rebalance
    /// start, stop). Set before start().
    void set_change_hook(std::function<void()> fn) { changed_ = std::move(fn); }

    const options& opts() const { return opts_; }

    /// Heartbeats happen every third of the session timeout, at most every 3 s (Kafka's
    /// heartbeat.interval.ms default), so that a rebalance is noticed quickly.
    std::chrono::milliseconds heartbeat_interval() const;
    /// How often a pattern subscription and the leader's partition counts are re-read.
    static constexpr std::chrono::milliseconds metadata_interval{5000};

private:
    enum class wake { none, subscription, stop };

    boost::asio::awaitable<void> run(std::shared_ptr<group_member> self);
    /// One join + sync round; false when the member must try again.
    boost::asio::awaitable<bool> join_and_sync();
    boost::asio::awaitable<std::vector<topic_name>> resolve_topics();
    boost::asio::awaitable<std::map<std::string, std::vector<std::byte>>> assign(
        const backend::api::join_group_result& joined);
    boost::asio::awaitable<void> revoke();
    boost::asio::awaitable<void> sleep(std::chrono::milliseconds d);
    boost::asio::awaitable<void> leave();
    void set_state(state s);
    void poke();
    void notify_change();

    backend::api::groups& groups_;
    backend::api::topics& topics_;
    boost::asio::strand<boost::asio::any_io_executor> strand_;
    boost::asio::steady_timer timer_;  // on the strand: heartbeat and backoff waits
    options opts_;
    revoke_hook revoke_;

    mutable std::mutex mu_;
    state state_;
    std::vector<topic_name> sub_topics_;
    std::optional<std::string> sub_pattern_;
    std::shared_ptr<re2::RE2> pattern_;
    std::shared_ptr<const topic_filter> pattern_filter_;
    std::uint64_t sub_version_ = 0;  // bumped by every subscription change
    bool stopping_ = false;
    bool leave_on_stop_ = true;

    // Strand-only: the member's identity and the topics of its current join.
    std::string member_id_;
    std::int32_t generation_ = -1;
    std::uint64_t joined_version_ = 0;
    std::vector<topic_name> joined_topics_;
    std::map<std::string, std::int32_t> leader_counts_;  // the leader's view when it assigned
    bool in_group_ = false;
    bool poked_ = false;  // a poke() arrived while the loop was not sleeping

    std::function<void()> changed_;
    std::atomic<bool> done_{false};
};

}  // namespace sluice::backend::client
