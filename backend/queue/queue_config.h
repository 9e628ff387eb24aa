// A queue's attributes (owned by backend/queue): SQS's attribute names and values, checked
// and parsed into the settings the queue service acts on, and rendered back for
// GetQueueAttributes. Pure functions; no state.
//
// Settable: DelaySeconds (0-900), MaximumMessageSize (1024-1048576), MessageRetentionPeriod
// (60-1209600), Policy (a JSON object), ReceiveMessageWaitTimeSeconds (0-20), VisibilityTimeout
// (0-43200), RedrivePolicy ({"deadLetterTargetArn", "maxReceiveCount" 1-1000}),
// RedriveAllowPolicy ({"redrivePermission": allowAll | denyAll | byQueue, "sourceQueueArns"}),
// KmsMasterKeyId, KmsDataKeyReusePeriodSeconds (60-86400), SqsManagedSseEnabled; on FIFO
// queues also ContentBasedDeduplication, DeduplicationScope (queue | messageGroup) and
// FifoThroughputLimit (perQueue | perMessageGroupId). FifoQueue only at creation. An empty
// value of a JSON attribute (RedrivePolicy, RedriveAllowPolicy, Policy) removes it.
// Sluice's own, at creation only: SluiceStartPosition (earliest | latest): where a queue that
// adopts an existing topic starts (default earliest: the topic's log start offset).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/api/common.h"
#include "backend/api/queues.h"

namespace sluice::backend::queue {

/// Where queue ARNs point: arn:aws:sqs:<region>:<account>:<queue>.
struct arn_scheme {
    std::string region = "us-east-1";
    std::string account = "000000000000";

    std::string arn(const std::string& queue) const;
    /// The queue an ARN of this region and account names (nullopt for anything else).
    std::optional<std::string> queue_of(const std::string& arn) const;
};

struct redrive_policy {
    std::string dead_letter_target_arn;
    std::string dead_letter_queue;  // the queue that ARN names
    std::int32_t max_receive_count = 0;
};

struct redrive_allow_policy {
    enum class permission { allow_all, deny_all, by_queue };
    permission redrive_permission = permission::allow_all;
    std::vector<std::string> source_queue_arns;
};

/// The parsed attributes of one queue.
struct queue_config {
    bool fifo = false;
    std::int64_t visibility_timeout_s = 30;
    std::int64_t delay_s = 0;
    std::int64_t retention_s = 345600;
    std::int64_t maximum_message_size = 1048576;
    std::int64_t receive_wait_s = 0;
    bool content_based_deduplication = false;
    bool deduplicate_per_group = false;  // DeduplicationScope=messageGroup
    bool throughput_per_group = false;   // FifoThroughputLimit=perMessageGroupId
    std::optional<redrive_policy> redrive;
    std::optional<redrive_allow_policy> redrive_allow;
    std::string policy;  // the JSON document, or empty
    std::string kms_master_key_id;
    std::int64_t kms_data_key_reuse_s = 300;
    bool sqs_managed_sse = true;
};

/// Limits SQS documents, shared by the service and its tests.
inline constexpr std::int64_t max_visibility_timeout_s = 43200;
inline constexpr std::int64_t max_delay_s = 900;
inline constexpr std::int64_t max_wait_s = 20;
inline constexpr std::size_t max_message_attributes = 10;
inline constexpr std::size_t max_tags = 50;
inline constexpr std::size_t max_permission_statements = 20;

/// SQS's rule for a new queue's name (1-80 of [A-Za-z0-9_-], ".fifo" at the end of a FIFO
/// queue's).
bool valid_new_queue_name(const std::string& name, bool fifo);

/// Applies `attributes` (create: on the defaults; set: on a queue's current ones) and checks
/// every value. `creating` allows FifoQueue and SluiceStartPosition. Unknown names are
/// invalid_attribute_name, bad values invalid_attribute_value, each with a message naming the
/// attribute. `stored` receives the normalized values to persist (RedrivePolicy as compact JSON,
/// numbers without leading zeros); the dead-letter target's existence is the caller's check.
api::backend_result<queue_config> apply_attributes(const queue_config& base,
                                                 const api::attribute_map& attributes,
                                                 bool creating, const arn_scheme& arns,
                                                 api::attribute_map& stored);

/// Whether a queue's name makes it a FIFO queue (it ends in ".fifo").
inline bool is_fifo_name(std::string_view name) {
    return name.size() > 5 && name.substr(name.size() - 5) == ".fifo";
}

/// The config a queue's stored attributes describe (they were checked when stored).
queue_config config_from_stored(bool fifo, const api::attribute_map& stored, const arn_scheme& arns);

/// The attribute names GetQueueAttributes knows; `All` is expanded by the caller.
bool known_attribute_name(const std::string& name);

/// The settable attributes' current values, as GetQueueAttributes shows them.
api::attribute_map render_settable(const queue_config& c);

/// SQS's tag rules: a key of 1-128 characters, a value of at most 256; invalid_parameter_value.
api::backend_error check_tag(const std::string& key, const std::string& value);

}  // namespace sluice::backend::queue
