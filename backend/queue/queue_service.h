// The queue service (owned by backend/queue): SQS queues over any backend's topics and records
// (api::queues). A queue is the topic of the same name plus a queue_state; messages are records
// of that topic, and the state lives in a state_log (the native backend: the compacted
// internal topic __queue_state). It sees only backend/api and the state_log, so a backend over
// a Kafka cluster can run it unchanged.
//
//   SQS front ──api::queues──> queue_service ──> queue_handle (one per queue, its own mutex)
//                                   │                ├── queue_state (window, cursors, groups)
//                                   │                ├── receivers: parked long polls
//                                   │                └── FIFO deduplication window
//                                   ├── api::records: produce (send, dead-letter, move),
//                                   │     fetch (the tailer: reads the topic into the window;
//                                   │     point reads of redelivered messages)
//                                   ├── api::topics: create, describe, delete, list
//                                   └── state_log: append under the queue's mutex, then flush
//
// Concurrency: one mutex per queue guards its state; every call does its state change and the
// state_log append under it without suspending (so records reach the log in the order the
// changes were made), then waits outside it (the flush, a produce, a long poll). The registry of
// queues has its own mutex; creation, adoption and deletion are serialised by an async admin
// lock. A parked receive is woken by whoever makes a message available (the tailer, a
// visibility change), or by its timer at the earliest delay or visibility deadline.
// Lifecycle: construct; load() replays the state log and fits every queue to its topic (on a
// private io_context, before any front calls it); start(ex) starts the tailers and move tasks
// on `ex`; stop() answers every parked call and stops the background work (it ends within
// tail_wait); destroy after the executor's threads have stopped.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "backend/api/client.h"
#include "backend/api/queues.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"
#include "backend/queue/queue_config.h"
#include "backend/queue/queue_state.h"
#include "backend/queue/receipt.h"
#include "backend/queue/state_log.h"
#include "backend/queue/wakeup.h"

namespace sluice::backend::queue {

/// Settings (docs/configuration.md names them sqs.*).
struct queue_settings {
    arn_scheme arns;
    /// Partitions of the topic CreateQueue creates.
    std::int32_t partitions = 1;
    queue_limits limits;
    /// A deleted queue's name may be used again after this long (SQS: 60 s).
    std::int64_t deleted_name_reuse_ms = 60000;
    /// Purges of one queue at least this far apart (SQS: 60 s).
    std::int64_t purge_interval_ms = 60000;
    /// FIFO deduplication window (SQS: 5 minutes).
    std::int64_t deduplication_window_ms = 300000;
    /// The longest one tailer fetch parks: how long stop() may take to end background work.
    std::chrono::milliseconds tail_wait{500};
    /// SenderId of every message (no authentication yet: the account).
    std::string sender_id = "000000000000";
    /// Receives of standard queues without a redrive policy are answered before their records
    /// are stored, under receive leases (queue_state.h): what upstream mode sets, where every
    /// stored change waits for a transaction on the cluster. Off, every receive waits.
    bool leased_receives = false;
    /// A new lease reaches this many offsets past the last message a receive took, and lasts
    /// this much past its visibility timeout: the receives between leases need not wait, and a
    /// new owner holds at most that many unreceived messages that long after a crash.
    std::int64_t lease_ahead = 1000;
    std::int64_t lease_slack_ms = 5000;
};

class queue_service final : public api::queues {
public:
    /// `producer`: where messages are sent (a Kafka cluster's client level); null: produced
    /// through `records` (the native backend's broker level).
    queue_service(api::topics& topics, api::records& records, state_log& log,
                  queue_settings settings, std::function<std::int64_t()> wall_clock = {},
                  api::producer* producer = nullptr);
    ~queue_service() override;
    queue_service(const queue_service&) = delete;
    queue_service& operator=(const queue_service&) = delete;

    /// Replays the state log, rebuilds the FIFO deduplication windows and fits every queue to
    /// its topic. Throws std::runtime_error when the state log cannot be read.
    void load();
    void start(boost::asio::any_io_executor ex);
    void stop();

    // --- api::queues ----------------------------------------------------------------------------
    api::awaitable<api::backend_result<api::queue_name>> create_queue(api::queue_name name,
                                                                    api::attribute_map attributes,
                                                                    api::attribute_map tags) override;
    api::awaitable<api::backend_result<api::queue_name>> get_queue(api::queue_name name) override;
    api::awaitable<std::vector<api::queue_name>> list_queues(std::string prefix) override;
    api::awaitable<api::backend_result<void>> delete_queue(api::queue_name name) override;
    api::awaitable<api::backend_result<api::attribute_map>> get_attributes(
        api::queue_name name, std::vector<std::string> attribute_names) override;
    api::awaitable<api::backend_result<void>> set_attributes(api::queue_name name,
                                                           api::attribute_map attributes) override;
    api::awaitable<api::backend_result<void>> purge_queue(api::queue_name name) override;
    api::awaitable<api::backend_result<void>> tag_queue(api::queue_name name,
                                                      api::attribute_map tags) override;
    api::awaitable<api::backend_result<void>> untag_queue(api::queue_name name,
                                                        std::vector<std::string> keys) override;
    api::awaitable<api::backend_result<api::attribute_map>> list_tags(api::queue_name name) override;
    api::awaitable<api::backend_result<void>> add_permission(api::queue_name name, std::string label,
                                                           std::vector<std::string> accounts,
                                                           std::vector<std::string> actions) override;
    api::awaitable<api::backend_result<void>> remove_permission(api::queue_name name,
                                                              std::string label) override;
    api::awaitable<api::backend_result<std::vector<api::queue_name>>> dead_letter_source_queues(
        api::queue_name name) override;
    api::awaitable<api::backend_result<std::vector<api::sent_message>>> send_messages(
        api::queue_name name, std::vector<api::outgoing_message> messages) override;
    api::awaitable<api::backend_result<std::vector<api::received_message>>> receive_messages(
        api::receive_request req) override;
    api::awaitable<api::backend_result<std::vector<api::backend_error>>> delete_messages(
        api::queue_name name, std::vector<std::string> receipt_handles) override;
    api::awaitable<api::backend_result<std::vector<api::backend_error>>> change_visibility(
        api::queue_name name, std::vector<api::visibility_change> changes) override;
    api::awaitable<api::backend_result<std::string>> start_message_move_task(
        std::string source_arn, std::optional<std::string> destination_arn,
        std::optional<std::int32_t> max_per_second) override;
    api::awaitable<api::backend_result<std::vector<api::move_task>>> list_message_move_tasks(
        std::string source_arn, std::int32_t max_results) override;
    api::awaitable<api::backend_result<std::int64_t>> cancel_message_move_task(
        std::string task_handle) override;
    std::optional<api::move_task> find_message_move_task(
        const std::string& task_handle) const override;
    std::vector<api::queue_view> view_queues() const override;

    /// Messages the tailers have read from the queues' topics since start (tests wait on it).
    std::uint64_t messages_read() const { return messages_read_.load(std::memory_order_relaxed); }

private:
    /// A FIFO deduplication id of the window: the message sent with it, a send of it under
    /// way, or a send whose outcome is unknown (its produce failed in a way that may have
    /// stored the record: a timeout, a cluster gone while the write was in flight). An unknown
    /// id's next send first looks for the record in ref.partition from offset `from` (where
    /// the attempt could have landed), answers the stored message when found, and sends only
    /// when it is not there.
    struct dedup_entry {
        message_ref ref;
        std::int64_t expires_ms = 0;
        bool pending = false;  // its send (or the look for an unknown one) has not completed yet
        bool unknown = false;  // ref.offset means nothing; look from `from`
        std::int64_t from = 0;
    };
    struct queue_handle {
        std::mutex mu;
        queue_record meta;
        queue_state state;
        wakeup_list receivers;
        wakeup_list tailer;  // the tailer, parked while the read-ahead budget is used up
        wakeup_list senders;  // FIFO sends waiting for a concurrent send of the same id
        std::unordered_map<std::string, dedup_entry> dedup;
        std::deque<std::pair<std::int64_t, std::string>> dedup_expiry;
        std::int64_t armed_due = std::numeric_limits<std::int64_t>::max();
        std::uint32_t next_partition = 0;  // round robin for messages without a group
        std::int64_t waiting = 0;          // receives parked now
        bool deleted = false;
        bool tailing = false;

        queue_handle(queue_record m, queue_state s) : meta(std::move(m)), state(std::move(s)) {}
    };
    using handle_ptr = std::shared_ptr<queue_handle>;
    /// A message move task: its record (guarded by mu) and whether to stop.
    struct task_state {
        std::mutex mu;
        task_record record;
        std::atomic<bool> cancel{false};
        bool running = false;  // its coroutine was spawned
    };

    // registry and administration (queue_service.cc)
    handle_ptr find(const std::string& name) const;
    api::awaitable<api::backend_result<handle_ptr>> find_or_adopt(const std::string& name);
    api::awaitable<api::backend_result<handle_ptr>> make_queue(const std::string& name,
                                                             api::attribute_map attributes,
                                                             api::attribute_map tags, bool adopt_only);
    api::backend_error check_redrive(const queue_config& c, const std::string& name) const;
    result<state_log::position> append_locked(queue_handle& q, const change_list& changes,
                                              std::vector<encoded_record> extra = {});
    api::awaitable<result<void>> flush(std::optional<state_log::position> p);
    api::awaitable<api::backend_result<void>> write_meta(handle_ptr q,
                                                       std::function<api::backend_error(queue_handle&)> edit);
    api::awaitable<std::vector<std::int64_t>> log_ends(const std::string& topic, std::int32_t partitions);
    void after_change(queue_handle& q, std::size_t made_available);
    /// Makes the messages a receive took available again (it is not answered); not the
    /// dead-letter moves nor those in `dropped`. Appends without waiting.
    void give_back_unanswered(queue_handle& q, const std::vector<taken_message>& taken,
                              const std::set<message_ref>& dropped);
    std::int64_t now() const { return wall_(); }

    // the tailer and activation (queue_tailer.cc)
    api::awaitable<void> tail(handle_ptr q);
    api::awaitable<api::backend_error> fit_to_topic(handle_ptr q, bool start_latest);
    api::awaitable<void> rebuild_deduplication(handle_ptr q);
    void spawn_tailer(const handle_ptr& q);

    // messages (queue_messages.cc)
    /// What read_messages found: the bodies it read, and the messages whose records are
    /// gone for good (below the log start, or an offset the log holds no message at). A ref
    /// in neither could not be read now (the cluster did not answer in time): it is still
    /// there, and must not be given up.
    struct read_outcome {
        std::map<message_ref, std::shared_ptr<const stored_message>> found;
        std::set<message_ref> gone;
    };
    api::awaitable<read_outcome> read_messages(handle_ptr q, std::vector<message_ref> refs);
    /// What find_sent found of a send whose outcome is unknown.
    struct sent_lookup {
        enum class outcome : std::uint8_t { found, absent, unreadable } what = outcome::unreadable;
        message_ref ref;
    };
    /// Looks for the message deduplicated as `key` in `partition` of q's topic, from offset
    /// `from` to the partition's end now (read committed).
    api::awaitable<sent_lookup> find_sent(handle_ptr q, std::string key, std::int32_t partition,
                                          std::int64_t from);
    /// The deduplication key of a message of a queue configured as `c`.
    static std::string deduplication_key(const queue_config& c, const stored_message& m);
    api::awaitable<void> dead_letter(handle_ptr q, std::vector<taken_message> moves,
                                     std::optional<state_log::position>& pos);
    api::received_message to_received(const queue_handle& q, const taken_message& t,
                                      const stored_message& m) const;
    std::optional<receipt> verify_handle(const queue_handle& q, const std::string& handle) const;

    // move tasks (move_tasks.cc)
    api::awaitable<void> run_task(std::shared_ptr<task_state> task);
    api::awaitable<void> persist_task(std::shared_ptr<task_state> task);
    void spawn_task(const std::shared_ptr<task_state>& task);

    api::topics& topics_;
    api::records& records_;
    api::producer* producer_;
    state_log& log_;
    queue_settings settings_;
    std::function<std::int64_t()> wall_;
    std::unique_ptr<receipt_signer> signer_;

    mutable std::mutex registry_mu_;
    std::map<std::string, handle_ptr> queues_;
    std::map<std::string, std::int64_t> deleted_names_;  // name -> when deleted
    std::map<std::string, std::shared_ptr<task_state>> tasks_;  // by handle

    // The async admin lock: one creation, adoption or deletion at a time.
    std::mutex admin_mu_;
    bool admin_busy_ = false;
    wakeup_list admin_waiters_;
    class admin_guard;
    api::awaitable<admin_guard> lock_admin();

    std::optional<boost::asio::any_io_executor> executor_;
    std::atomic<bool> stopping_{false};
    std::atomic<std::uint64_t> messages_read_{0};
};

}  // namespace sluice::backend::queue
