// The queues of a fleet as a gateway that does not own them sees them (owned by
// backend/queue): it follows the queue state topic (`_sluice_queue_state`, read committed;
// every partition the topic has when the follower starts: one per unit of ownership)
// and keeps each queue's stored record and config, nothing of its messages; and it sends
// messages to a standard queue's topic itself, through the gateway's idempotent producer,
// answering as the owner would (same checks, send_checks.h; same message ids). The owner's
// tailer reads those records like any other producer's (a delay travels in the record's
// sqs:visible-at header, message_codec.h).
//
// FIFO queues are not sent to here: their deduplication window and their groups' sequence
// need the owner's state (a retried send must find the first one), so they go through it.
//
// What it knows trails the owner's writes by the follower's poll (a queue created, changed or
// deleted a moment ago may not be known yet, or known as it was): a queue it does not know is
// the owner's to answer; a DelaySeconds or MaximumMessageSize changed a moment ago applies
// here a moment later; a send to a queue deleted a moment ago fails as the producer finds its
// topic gone (or, when the queue did not own its topic, lands in the topic like any Kafka
// producer's record).
//
// Lifecycle: construct, start(ex) (spawns the follower on `ex`), stop() while `ex` still runs
// (ends the follower within its poll wait, closes its consumer), destroy.
// Concurrency: find() and send_messages() from any thread; send_messages resumes on the
// caller's executor.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "backend/api/client.h"
#include "backend/api/queues.h"
#include "backend/queue/queue_config.h"
#include "backend/queue/state_records.h"

namespace sluice::backend::queue {

class queue_directory {
public:
    struct entry {
        queue_record meta;
        queue_config config;
    };

    queue_directory(api::client& client, std::string state_topic, arn_scheme arns);
    ~queue_directory();
    queue_directory(const queue_directory&) = delete;
    queue_directory& operator=(const queue_directory&) = delete;

    void start(boost::asio::any_io_executor ex);
    void stop();

    /// The queue as last read from the state topic; nullopt when it names no such queue (yet).
    std::optional<entry> find(const std::string& name) const;
    /// A standard queue the directory knows (where send_messages may send).
    bool sends_here(const std::string& name) const;

    /// SendMessage(Batch) on a standard queue the directory knows: each message checked and
    /// produced to the queue's topic (acks=all, idempotent); one answer per message. Errors:
    /// queue_does_not_exist when the directory does not know the queue (any more),
    /// backend_unavailable for a FIFO queue (the owner's to answer).
    api::awaitable<api::backend_result<std::vector<api::sent_message>>> send_messages(
        api::producer& producer, std::string name, std::vector<api::outgoing_message> messages,
        std::int64_t now_ms);

    /// Records of the state topic read so far (queue records and everything else).
    std::uint64_t records_read() const { return read_.load(std::memory_order_relaxed); }

private:
    boost::asio::awaitable<void> follow();
    void apply(protocol::bytes_view key, std::optional<protocol::bytes_view> value);

    api::client& client_;
    std::string topic_;
    arn_scheme arns_;

    mutable std::mutex mu_;
    std::map<std::string, entry> queues_;
    std::shared_ptr<api::consumer> consumer_;
    bool started_ = false;
    bool done_ = false;  // the follower has ended
    std::atomic<bool> stopping_{false};
    std::atomic<std::uint64_t> read_{0};
    std::atomic<std::uint32_t> round_robin_{0};
};

}  // namespace sluice::backend::queue
