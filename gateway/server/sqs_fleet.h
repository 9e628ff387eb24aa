// SQS queues over a Kafka cluster served by a fleet of gateways (owned by gateway/server):
// every gateway started with `--upstream BOOTSTRAP --sqs ...` joins the consumer group
// _sluice_queue_owner over the lease topic _sluice_queue_owners (one partition per partition of
// the queue state topic _sluice_queue_state, nothing written to it); the member assigned its
// partition 0 owns the queues' state (partition 0 of _sluice_queue_state). The owner takes the transactional id
// _sluice_queue_state-0 over (init_transactions fences every earlier owner: its open
// transaction is aborted and its later writes are refused by the cluster), replays the state
// topic (read committed) and serves; every state write is then one transaction, committed
// before the SQS call that made it is answered. Losing the partition (a rebalance, a session
// timeout) or a write refused as fenced ends the serving at once; a fenced gateway then
// rejoins the group with a new member, giving its lease up.
//
// The other gateways send a standard queue's messages (SendMessage, SendMessageBatch) to its
// topic themselves, through the gateway's idempotent producer, knowing the queues from the
// state topic they follow (backend/queue/queue_directory.h); the owner's tailer reads those
// records as any producer's. They forward every other SQS request (and a FIFO queue's sends,
// whose deduplication needs the owner's window) as it came to the owner (over keep-alive
// connections they reuse, sqs::forward_pool), whose address they read from the group: the owner's member has client id "sluice-sqs-owner <its SQS base URL>"
// (sqs.fleet.url, else http://<the SQS listener's address>). With no owner known within a
// bounded wait a request is answered 503 ServiceUnavailable.
//
// The unit of ownership is one partition of the state topic and its transactional id
// "<state topic>-<partition>": today the topic has one partition (every queue's state); a
// later step spreads queues over partitions, one owner each (queue_owner_state per unit).
//
// Built into the sluice executable with server.cc (it builds backend/queue's service: the
// two start-up files allowed to, scripts/check-includes).
//
// Lifecycle: construct (nothing reaches the cluster yet), start() once the SQS listener is
// bound (joins the group), stop() before the io threads stop (leaves the group, answers parked
// calls, stops the owned queues); destroy after the io threads stopped and before the client.
// Concurrency: api::queues and route() from any thread (calls resume on the caller's
// executor); the group's callbacks run on the executor given to start(); claims and tear-downs
// on a thread of the fleet's own.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "backend/api/client.h"
#include "backend/api/queues.h"
#include "gateway/server/queue_owner_state.h"
#include "gateway/sqs/sqs_forward.h"

namespace sluice::backend::queue {
struct queue_settings;
class queue_directory;
}

namespace sluice::gateway {

struct sqs_fleet_options {
    std::string group = "_sluice_queue_owner";
    std::string state_topic = "_sluice_queue_state";
    /// What the owner group subscribes to: partition N of it is the lease of partition N of
    /// the state topic (as many partitions; nothing is written to it, so the owner's member
    /// fetches nothing: subscribed to the state topic itself, it read back every state write).
    std::string lease_topic = "_sluice_queue_owners";
    /// The unit of ownership: this partition of the state topic (one partition today).
    std::int32_t unit = 0;
    /// The owner group's session timeout: how long a silent owner (stopped, cut off, killed)
    /// keeps the queues before another gateway takes them over.
    std::int32_t session_timeout_ms = 10000;
    /// How long a request waits for an owner to be known (and serving) before 503.
    std::chrono::milliseconds owner_wait{15000};
    /// A forwarded request's bound (a long poll's 20 s and then some).
    std::chrono::milliseconds forward_timeout{60000};
    /// A claim's bound for init_transactions.
    std::chrono::milliseconds init_timeout{30000};

    std::string transactional_id() const { return state_topic + "-" + std::to_string(unit); }
};

/// The client id prefix of an owner group member; its SQS base URL follows.
inline constexpr std::string_view fleet_member_prefix = "sluice-sqs-owner ";

class owned_queues;

class sqs_fleet final : public backend::api::queues, public sqs::sqs_forwarder {
public:
    sqs_fleet(backend::api::client& client, const backend::queue::queue_settings& settings,
              sqs_fleet_options opts);
    ~sqs_fleet() override;
    sqs_fleet(const sqs_fleet&) = delete;
    sqs_fleet& operator=(const sqs_fleet&) = delete;

    /// Joins the owner group; `ex` runs the group's callbacks and the owned queues' tailers;
    /// `self_url` is this gateway's SQS base URL as the others reach it.
    void start(boost::asio::any_io_executor ex, std::string self_url);
    void stop();
    bool serving() const;

    // --- sqs_forwarder --------------------------------------------------------------------
    boost::asio::awaitable<sqs::forward_outcome> route(const http_request_context& ctx) override;

    // --- api::queues: the owned service's, or backend_unavailable when not serving --------
    backend::api::awaitable<backend::api::backend_result<backend::api::queue_name>> create_queue(
        backend::api::queue_name name, backend::api::attribute_map attributes,
        backend::api::attribute_map tags) override;
    backend::api::awaitable<backend::api::backend_result<backend::api::queue_name>> get_queue(
        backend::api::queue_name name) override;
    backend::api::awaitable<std::vector<backend::api::queue_name>> list_queues(
        std::string prefix) override;
    backend::api::awaitable<backend::api::backend_result<void>> delete_queue(
        backend::api::queue_name name) override;
    backend::api::awaitable<backend::api::backend_result<backend::api::attribute_map>>
    get_attributes(backend::api::queue_name name, std::vector<std::string> names) override;
    backend::api::awaitable<backend::api::backend_result<void>> set_attributes(
        backend::api::queue_name name, backend::api::attribute_map attributes) override;
    backend::api::awaitable<backend::api::backend_result<void>> purge_queue(
        backend::api::queue_name name) override;
    backend::api::awaitable<backend::api::backend_result<void>> tag_queue(
        backend::api::queue_name name, backend::api::attribute_map tags) override;
    backend::api::awaitable<backend::api::backend_result<void>> untag_queue(
        backend::api::queue_name name, std::vector<std::string> keys) override;
    backend::api::awaitable<backend::api::backend_result<backend::api::attribute_map>> list_tags(
        backend::api::queue_name name) override;
    backend::api::awaitable<backend::api::backend_result<void>> add_permission(
        backend::api::queue_name name, std::string label, std::vector<std::string> accounts,
        std::vector<std::string> actions) override;
    backend::api::awaitable<backend::api::backend_result<void>> remove_permission(
        backend::api::queue_name name, std::string label) override;
    backend::api::awaitable<backend::api::backend_result<std::vector<backend::api::queue_name>>>
    dead_letter_source_queues(backend::api::queue_name name) override;
    backend::api::awaitable<backend::api::backend_result<std::vector<backend::api::sent_message>>>
    send_messages(backend::api::queue_name name,
                  std::vector<backend::api::outgoing_message> messages) override;
    backend::api::awaitable<
        backend::api::backend_result<std::vector<backend::api::received_message>>>
    receive_messages(backend::api::receive_request req) override;
    backend::api::awaitable<backend::api::backend_result<std::vector<backend::api::backend_error>>>
    delete_messages(backend::api::queue_name name,
                    std::vector<std::string> receipt_handles) override;
    backend::api::awaitable<backend::api::backend_result<std::vector<backend::api::backend_error>>>
    change_visibility(backend::api::queue_name name,
                      std::vector<backend::api::visibility_change> changes) override;
    backend::api::awaitable<backend::api::backend_result<std::string>> start_message_move_task(
        std::string source_arn, std::optional<std::string> destination_arn,
        std::optional<std::int32_t> max_per_second) override;
    backend::api::awaitable<backend::api::backend_result<std::vector<backend::api::move_task>>>
    list_message_move_tasks(std::string source_arn, std::int32_t max_results) override;
    backend::api::awaitable<backend::api::backend_result<std::int64_t>> cancel_message_move_task(
        std::string task_handle) override;
    std::optional<backend::api::move_task> find_message_move_task(
        const std::string& task_handle) const override;
    std::vector<backend::api::queue_view> view_queues() const override;

private:
    std::shared_ptr<owned_queues> current() const;
    void subscribe_when_ready(const std::shared_ptr<backend::api::consumer>& member);
    std::shared_ptr<backend::api::consumer> join();
    void rejoin();
    void assignment_changed(const backend::api::consumer* from);
    void claim(std::uint64_t id);
    void fenced(std::uint64_t claim);
    void release(std::shared_ptr<owned_queues> q);
    boost::asio::awaitable<std::optional<std::string>> owner_url();

    backend::api::client& client_;
    std::unique_ptr<backend::queue::queue_settings> settings_;
    sqs_fleet_options opts_;
    std::string self_url_;
    boost::asio::any_io_executor ex_;

    boost::asio::io_context io_;  // claims and tear-downs
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    std::thread thread_;

    mutable std::mutex mu_;
    queue_owner_state state_;
    std::shared_ptr<owned_queues> current_;
    /// Queues no longer served (stopped), destroyed with the fleet: their tailers' last steps
    /// may still be queued on the io threads until those stop.
    std::vector<std::shared_ptr<owned_queues>> released_;
    bool stopping_ = false;
    std::shared_ptr<backend::api::consumer> member_;

    /// The queues as the state topic names them: where this gateway sends standard queues'
    /// messages itself while it does not own them.
    std::unique_ptr<backend::queue::queue_directory> directory_;

    /// Keep-alive connections to the owner (forwarded requests).
    sqs::forward_pool forward_pool_;

    std::mutex owner_mu_;
    std::optional<std::string> owner_cache_;
    std::chrono::steady_clock::time_point owner_cached_at_{};
};

}  // namespace sluice::gateway
