// What every SQS action handler shares (owned by gateway/sqs): the request as read, the
// response being written, the backend's queues, and helpers for queue URLs, batch entries and
// errors. One handler per action in actions_queue.cc, actions_message.cc, actions_move.cc; the
// table in sqs_front.cc names them.
//
// A handler reads its parameters, checks what the request's shape decides (required
// parameters, batch sizes and ids), calls api::queues, and writes the answer or sets `error`.
// It runs on the connection's executor; the context outlives it (the front awaits it).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "gateway/policy/chain.h"
#include "gateway/policy/front_acls.h"

#include "backend/api/queues.h"
#include "gateway/httpcore/cors.h"
#include "gateway/sqs/errors.h"
#include "protocol/sqs/request.h"
#include "protocol/sqs/response.h"

namespace sluice::gateway::sqs {

/// The front's settings (docs/configuration.md: sqs.*).
struct sqs_settings {
    std::string region = "us-east-1";
    std::string account = "000000000000";
    /// The scheme and authority queue URLs start with; empty: http:// (https:// on an
    /// HTTPS listener) and the request's Host.
    std::string advertised_url;
    /// The browser origins served (http.allowed.origins; cors.h): a request carrying another
    /// Origin is refused before anything else.
    cors_policy origins;
};

struct action_context {
    backend::api::queues& queues;
    const sqs_settings& settings;
    protocol::sqs::wire wire = protocol::sqs::wire::json;
    std::string action;
    protocol::sqs::request_view req;
    /// The request's Host header and whether it came over TLS (for queue URLs).
    std::string host;
    bool tls = false;
    std::unique_ptr<protocol::sqs::response_writer> out;
    std::optional<sqs_error> error;
    /// Who asks, from where, and the policy chain (ListQueues lists only the queues it may
    /// DESCRIBE).
    policy_chain chain;
    std::string principal = "User:ANONYMOUS";
    std::string peer_host;  // the authorizer's host of the peer
    /// `principal` from `peer_host`, for the chain (views into this context).
    requester who() const {
        return requester{.front = policy_front::sqs, .principal = principal, .host = peer_host};
    }

    action_context(backend::api::queues& q, const sqs_settings& s, protocol::sqs::request_view r)
        : queues(q), settings(s), req(std::move(r)) {}

    std::string queue_url(const std::string& name) const;
    std::string queue_arn(const std::string& name) const;
    void fail(front_error e, std::string message) { error = to_sqs(e, std::move(message)); }
    void fail(const backend::api::backend_error& e) { error = to_sqs(e); }
    /// The queue a QueueUrl parameter names (set `error` and nullopt when absent or not one).
    std::optional<backend::api::queue_name> queue_from_url();
    /// A required string parameter (MissingParameter when absent).
    std::optional<std::string> required(std::string_view member);
    /// Copies a parameter-reading error into `error`; true when there was one.
    bool failed_reading();
};

using action_handler = boost::asio::awaitable<void> (*)(std::shared_ptr<action_context>);

/// A batch entry's Id and its request view.
struct batch_entry {
    std::string id;
    protocol::sqs::request_view view;
};
/// Reads and checks a batch: 1-10 entries, distinct Ids of 1-80 [A-Za-z0-9_-]. Sets `error`
/// and answers empty on a violation.
std::vector<batch_entry> read_batch(action_context& ctx, std::string_view query_entry);
/// Writes `Successful` and `Failed` of a batch answer; `write_ok` writes one success's members.
void write_batch_failure(protocol::sqs::response_writer& out, const std::string& id,
                         const sqs_error& e);

// Handlers (one per action).
boost::asio::awaitable<void> create_queue(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> get_queue_url(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> list_queues(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> delete_queue(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> get_queue_attributes(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> set_queue_attributes(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> purge_queue(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> tag_queue(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> untag_queue(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> list_queue_tags(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> add_permission(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> remove_permission(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> list_dead_letter_source_queues(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> send_message(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> send_message_batch(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> receive_message(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> delete_message(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> delete_message_batch(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> change_message_visibility(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> change_message_visibility_batch(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> start_message_move_task(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> list_message_move_tasks(std::shared_ptr<action_context> ctx);
boost::asio::awaitable<void> cancel_message_move_task(std::shared_ptr<action_context> ctx);

}  // namespace sluice::gateway::sqs
