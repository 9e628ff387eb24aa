// The queues interface of a backend (owned by backend/api): work queues with per-message
// acknowledgement, in the words of Amazon SQS (queues, messages, receipt handles, visibility,
// attributes), for the SQS front. A queue is a view over the topic of the same name: sending
// appends a record to that topic, and every record of the topic (whoever wrote it) is a
// message of the queue. The front translates a wire protocol; what a queue does (validation
// of attributes and messages, visibility, delays, retention, dead-letter queues, FIFO order and
// deduplication) is the backend's, so that every front and every backend agree.
//
// Names: queues are named by their topic. Attribute and message-attribute names and values are
// SQS's own (`VisibilityTimeout`, `RedrivePolicy`, ...), as strings; the backend parses and
// checks them, and answers a bad one with invalid_attribute_name or invalid_attribute_value and
// a message naming it. Queue ARNs are `arn:aws:sqs:<region>:<account>:<queue>` with the region
// and account the backend was configured with.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/api/common.h"
#include "protocol/core/ids.h"

namespace sluice::backend::api {

/// A queue's name: the name of its topic. SQS's rules for new queues: 1-80 characters of
/// [A-Za-z0-9_-], and a FIFO queue's name ends in ".fifo" (counted in the 80); an existing topic
/// of another legal topic name is also a queue.
using queue_name = strong<std::string, struct queue_name_tag>;

/// Queue attributes by SQS's names (`VisibilityTimeout` -> "30"), or tags (key -> value).
using attribute_map = std::map<std::string, std::string>;

/// One message attribute (or message system attribute: `AWSTraceHeader`).
struct message_attribute {
    std::string name;
    /// `String`, `Number` or `Binary`, optionally followed by a custom label (`Number.float`).
    std::string data_type;
    /// UTF-8 text for String and Number, raw bytes for Binary.
    std::string value;
    bool operator==(const message_attribute&) const = default;
};

/// A message to send.
struct outgoing_message {
    std::string body;
    std::vector<message_attribute> attributes;
    /// Message system attributes: only `AWSTraceHeader` (String) exists.
    std::vector<message_attribute> system_attributes;
    /// Per-message delay (standard queues only); the queue's DelaySeconds when unset.
    std::optional<std::chrono::seconds> delay;
    /// Required on FIFO queues (the order group); on a standard queue, a fair-queue group.
    std::optional<std::string> group_id;
    /// FIFO queues: required unless the queue has ContentBasedDeduplication.
    std::optional<std::string> deduplication_id;
};

/// What sending one message gave: an error, or its id (and, on FIFO queues, its sequence
/// number). A duplicate within the deduplication window answers the original's id.
struct sent_message {
    backend_error error;  // empty: sent
    std::string message_id;
    std::optional<std::string> sequence_number;
};

struct receive_request {
    queue_name queue;
    /// 1-10.
    std::int32_t max_messages = 1;
    /// 0 s - 12 h; the queue's VisibilityTimeout when unset.
    std::optional<std::chrono::seconds> visibility_timeout;
    /// 0-20 s; the queue's ReceiveMessageWaitTimeSeconds when unset. A long poll returns as
    /// soon as a message is available, and with nothing at the end of the wait.
    std::optional<std::chrono::seconds> wait;
    /// FIFO queues: retrying a receive with the same id (within five minutes, while those
    /// messages are still in flight under it) answers the same messages and receipt handles.
    std::optional<std::string> attempt_id;
};

/// A received message with every attribute it has; the front picks what the client asked for.
struct received_message {
    std::string message_id;
    /// Opaque and unforgeable: names the queue, the message and this receive.
    std::string receipt_handle;
    std::string body;
    std::vector<message_attribute> attributes;
    // --- system attributes ---
    std::int64_t sent_timestamp_ms = 0;
    std::int32_t receive_count = 0;  // ApproximateReceiveCount, this receive included
    std::int64_t first_receive_timestamp_ms = 0;
    std::string sender_id;
    std::optional<std::string> group_id;
    std::optional<std::string> deduplication_id;
    std::optional<std::string> sequence_number;
    std::optional<std::string> trace_header;  // AWSTraceHeader
    /// Messages a redrive put in a dead-letter queue: the ARN of the queue they came from.
    std::optional<std::string> dead_letter_source_arn;
};

struct visibility_change {
    std::string receipt_handle;
    std::chrono::seconds timeout{0};  // from now; 0 makes the message visible at once
};

/// A message move task (StartMessageMoveTask): moves the messages a dead-letter queue held when
/// the task started to their source queues (or to one destination), at a bounded rate.
struct move_task {
    std::string task_handle;
    std::string status;  // RUNNING, COMPLETED, CANCELLING, CANCELLED, FAILED
    std::string source_arn;
    std::optional<std::string> destination_arn;
    std::optional<std::int32_t> max_per_second;
    std::int64_t moved = 0;
    std::int64_t to_move = 0;
    std::optional<std::string> failure_reason;
    std::int64_t started_timestamp_ms = 0;
};

/// A queue's figures for /metrics (approximate, as SQS's are).
struct queue_view {
    queue_name name;
    bool fifo = false;
    std::int64_t available = 0;  // ApproximateNumberOfMessages
    std::int64_t in_flight = 0;  // ApproximateNumberOfMessagesNotVisible
    std::int64_t delayed = 0;    // ApproximateNumberOfMessagesDelayed
    /// Age of the oldest message not yet deleted, 0 when there is none.
    std::int64_t oldest_age_ms = 0;
    /// The queue's dead-letter queue (RedrivePolicy), when it has one.
    std::optional<queue_name> dead_letter_queue;
    /// Long polls parked on the queue now, waiting for a message or their end.
    std::int64_t waiting_receives = 0;
};

/// Queues.
///
/// Errors (api::errc, with a message for the client): queue_does_not_exist,
/// queue_already_exists, queue_deleted_recently, invalid_attribute_name,
/// invalid_attribute_value, invalid_parameter_value, missing_parameter,
/// invalid_message_contents, message_too_large, receipt_handle_invalid, message_not_inflight,
/// purge_queue_in_progress, over_limit, resource_not_found, unsupported_operation,
/// storage_error, not_leader (the backend is stopping), as each call lists.
///
/// Durability: every call that changes something is answered once the change is durable as
/// the backend's flush policy defines (send_messages as a produce with acks=all). After a crash,
/// no deleted message comes back, no sent message is lost, and a received message that was not
/// deleted becomes visible again when its visibility timeout ends.
/// Ordering: FIFO queues deliver each message group in send order, one receive's messages of a
/// group at a time (the next ones only once those are deleted or visible again). Messages a
/// call sends are appended in the order given.
/// Concurrency: every method may be called from any thread; awaitables resume on the caller's
/// executor, which must not run handlers concurrently (an io_context run by one thread, or a
/// strand).
class queues {
  public:
    virtual ~queues() = default;

    /// Creates a queue (and its topic), or adopts an existing topic of that name. An existing
    /// queue is answered as is when every given attribute has the value the queue has.
    /// Errors: invalid_parameter_value (the name), invalid_attribute_name,
    /// invalid_attribute_value, queue_already_exists (other attribute values),
    /// queue_deleted_recently, storage_error.
    virtual awaitable<backend_result<queue_name>> create_queue(queue_name name, attribute_map attributes,
                                                             attribute_map tags) = 0;
    /// The queue of that name; a topic that is no queue yet becomes one (with the default
    /// attributes, starting at the topic's log start offset). Errors: queue_does_not_exist.
    virtual awaitable<backend_result<queue_name>> get_queue(queue_name name) = 0;
    /// Every queue (every topic that is not internal) whose name starts with `prefix`, sorted.
    virtual awaitable<std::vector<queue_name>> list_queues(std::string prefix) = 0;
    /// Deletes the queue and its topic. Errors: queue_does_not_exist, storage_error.
    virtual awaitable<backend_result<void>> delete_queue(queue_name name) = 0;

    /// The attributes named (`All` for every one), computed ones included
    /// (ApproximateNumberOfMessages, QueueArn, ...). Errors: queue_does_not_exist,
    /// invalid_attribute_name.
    virtual awaitable<backend_result<attribute_map>> get_attributes(
        queue_name name, std::vector<std::string> attribute_names) = 0;
    /// Errors: queue_does_not_exist, invalid_attribute_name (unknown, or not settable such as
    /// FifoQueue), invalid_attribute_value, storage_error.
    virtual awaitable<backend_result<void>> set_attributes(queue_name name, attribute_map attributes) = 0;
    /// Deletes every message sent before the call. Errors: queue_does_not_exist,
    /// purge_queue_in_progress (a purge in the last 60 s), storage_error.
    virtual awaitable<backend_result<void>> purge_queue(queue_name name) = 0;

    /// Adds or replaces tags (at most 50). Errors: queue_does_not_exist,
    /// invalid_parameter_value, storage_error.
    virtual awaitable<backend_result<void>> tag_queue(queue_name name, attribute_map tags) = 0;
    virtual awaitable<backend_result<void>> untag_queue(queue_name name, std::vector<std::string> keys) = 0;
    virtual awaitable<backend_result<attribute_map>> list_tags(queue_name name) = 0;

    /// AddPermission / RemovePermission: a statement labelled `label` in the queue's Policy
    /// (kept, not enforced by this interface). Errors: queue_does_not_exist,
    /// invalid_parameter_value (a label that exists / does not exist, a bad action),
    /// over_limit, storage_error.
    virtual awaitable<backend_result<void>> add_permission(queue_name name, std::string label,
                                                         std::vector<std::string> accounts,
                                                         std::vector<std::string> actions) = 0;
    virtual awaitable<backend_result<void>> remove_permission(queue_name name, std::string label) = 0;
    /// The queues whose RedrivePolicy names this one as their dead-letter queue, sorted.
    virtual awaitable<backend_result<std::vector<queue_name>>> dead_letter_source_queues(
        queue_name name) = 0;

    /// Sends messages (one to ten, in order); the queue-level error, or one answer per message
    /// (invalid_parameter_value, missing_parameter, invalid_message_contents,
    /// message_too_large, invalid_attribute_value, storage_error, ...).
    virtual awaitable<backend_result<std::vector<sent_message>>> send_messages(
        queue_name name, std::vector<outgoing_message> messages) = 0;
    /// Up to max_messages messages, each now in flight for the visibility timeout. Errors:
    /// queue_does_not_exist, invalid_parameter_value, over_limit (too many messages in flight),
    /// storage_error.
    virtual awaitable<backend_result<std::vector<received_message>>> receive_messages(
        receive_request req) = 0;
    /// Deletes the messages; one answer per handle, in order. An authentic handle of a message
    /// already deleted succeeds; a handle of an older receive (the message was received again
    /// since) succeeds without deleting on a standard queue and is receipt_handle_invalid on
    /// a FIFO queue. Errors: queue_does_not_exist; per handle receipt_handle_invalid,
    /// storage_error.
    virtual awaitable<backend_result<std::vector<backend_error>>> delete_messages(
        queue_name name, std::vector<std::string> receipt_handles) = 0;
    /// Per change: receipt_handle_invalid, message_not_inflight, invalid_parameter_value
    /// (past 12 h after the receive), storage_error.
    virtual awaitable<backend_result<std::vector<backend_error>>> change_visibility(
        queue_name name, std::vector<visibility_change> changes) = 0;

    /// Starts moving the messages of a dead-letter queue (by ARN) to `destination_arn`, or to
    /// the queue each came from. Errors: resource_not_found (no such queue),
    /// invalid_parameter_value (not a dead-letter queue, a rate outside 1-500),
    /// unsupported_operation (a task is already running on the source).
    virtual awaitable<backend_result<std::string>> start_message_move_task(
        std::string source_arn, std::optional<std::string> destination_arn,
        std::optional<std::int32_t> max_per_second) = 0;
    /// The most recent tasks of a source queue (at most max_results, 1-10), newest first.
    virtual awaitable<backend_result<std::vector<move_task>>> list_message_move_tasks(
        std::string source_arn, std::int32_t max_results) = 0;
    /// Asks a running task to stop; answers the messages it has moved. Errors:
    /// resource_not_found (no such running task).
    virtual awaitable<backend_result<std::int64_t>> cancel_message_move_task(std::string task_handle) = 0;
    /// The task of a handle, in any status (CancelMessageMoveTask's ACL check needs its queues
    /// before the cancel); nullopt for a handle of no kept task. Does not wait.
    virtual std::optional<move_task> find_message_move_task(const std::string& task_handle) const = 0;

    /// Every queue's figures, without waiting for anything (for /metrics).
    virtual std::vector<queue_view> view_queues() const = 0;
};

}  // namespace sluice::backend::api
