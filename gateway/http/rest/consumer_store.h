// Where REST consumer instances are kept so that they survive a restart of sluice and, over a
// Kafka cluster, move between the gateways of a fleet (owned by gateway/http/rest). A compacted
// topic of sluice's own, created through api::admin, written through api::producer and read
// back through an api::consumer with manual assignment: the client level only, so that over a
// Kafka cluster another gateway finds the instances there.
//
// Topic _sluice_rest_consumers (1 partition, cleanup.policy=compact), created on the first
// write. One record per instance:
//   key    "<group>\0<instance name>"
//   value  JSON {"group","name","format","auto_offset_reset","auto_commit","fetch_min_bytes",
//          "request_timeout_ms","topics":[..],"pattern","pattern_principal","pattern_host"
//          (who subscribed to the pattern: it matches what they may DESCRIBE),
//          "assigned":[{"topic","partition"}],
//          "positions":[{"topic","partition","offset"}],
//          "owner" (the gateway process serving it; absent in older records)};
//          null (a tombstone) once deleted
// Written after every change of subscription, assignment or position (acks=1: a crash of the
// process loses nothing written, a crash of the machine what was not yet flushed); read once
// at start-up, the last record of each key winning, up to the end offset the cluster gave
// first; the read is tried again while the cluster cannot be reached, for up to 30 s (a
// gateway and its upstream restarted together: the gateway may ask first). In a fleet each
// gateway then follows the topic (follow()) to learn what the others write. Committed offsets
// stay in the group, as for any consumer; the stored position is where the instance had read
// to, which is where it resumes (the REST Proxy instead forgets its instances and answers 40403).
//
// Concurrency: thread-safe; writes go through one strand, so the records of one caller land
// in call order.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/strand.hpp>

#include "gateway/http/rest/consumer_instance.h"

#include "backend/api/client.h"

namespace sluice::gateway::rest {

class consumer_store {
public:
    static constexpr const char* topic = "_sluice_rest_consumers";

    consumer_store(backend::api::client& client, boost::asio::any_io_executor ex);

    struct loaded {
        std::vector<stored_instance> instances;
        /// The offset after the last record read: where follow() goes on (0 when nothing
        /// could be read).
        std::int64_t next = 0;
    };
    /// Every stored instance (none when the topic does not exist yet). Retries while the
    /// cluster cannot be reached, until load_deadline; then logs and returns what it read.
    boost::asio::awaitable<loaded> load();

    /// A record as follow() hands it on: the instance, or nullopt for a tombstone.
    using record_handler =
        std::function<void(sluice::group_id group, std::string name,
                           std::optional<stored_instance> value)>;
    /// Reads the records written from offset `from` on, by this gateway or any other, as they
    /// arrive, until `stopping()` (checked at least every poll_wait): each record to
    /// `on_record` (records that do not decode are skipped with a log line), then the offset
    /// after the last one to `on_position`. Waits for the topic while it does not exist.
    boost::asio::awaitable<void> follow(std::int64_t from, record_handler on_record,
                                        std::function<void(std::int64_t)> on_position,
                                        std::function<bool()> stopping);
    /// The topic's end offset now (-1 when it does not exist; nullopt when the cluster did
    /// not answer by `deadline`).
    boost::asio::awaitable<std::optional<std::int64_t>> end(
        std::chrono::steady_clock::time_point deadline) {
        return end_offset(deadline);
    }
    /// Writes the instance's state; returns once appended.
    boost::asio::awaitable<void> save(stored_instance s);
    /// Writes the tombstone of an instance.
    boost::asio::awaitable<void> erase(sluice::group_id group, std::string name);

    /// The encoding of one instance (exposed for tests).
    static std::string encode(const stored_instance& s);
    static std::optional<stored_instance> decode(std::string_view json);

private:
    using clock = std::chrono::steady_clock;
    static constexpr std::chrono::seconds load_deadline{30};
    static constexpr std::chrono::milliseconds max_pause{1000};
    static constexpr std::chrono::milliseconds poll_wait{500};

    /// The topic's end offset (-1 when it does not exist), asked again until `deadline` while
    /// the cluster does not answer; nullopt past it.
    boost::asio::awaitable<std::optional<std::int64_t>> end_offset(clock::time_point deadline);
    boost::asio::awaitable<void> write(std::string key, std::optional<std::string> value);
    boost::asio::awaitable<void> write_on_strand(std::string key, std::optional<std::string> value);

    backend::api::client& client_;
    boost::asio::strand<boost::asio::any_io_executor> strand_;
    std::atomic<bool> topic_ready_{false};
    // After a failed CreateTopics, writes are skipped (the topic is not there) and creation is
    // tried again no sooner than this; the pause doubles per failure up to max_create_pause.
    // Only touched on strand_.
    static constexpr std::chrono::milliseconds first_create_pause{1000};
    static constexpr std::chrono::milliseconds max_create_pause{60000};
    clock::time_point next_create_{};
    std::chrono::milliseconds create_pause_{first_create_pause};
    bool create_failing_ = false;
};

}  // namespace sluice::gateway::rest
