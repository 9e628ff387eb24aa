// SQS errors as the wire shows them (owned by gateway/sqs): the JSON protocol's __type, the
// Query protocol's <Code> (also sent in the x-amzn-query-error header, which SDKs of the JSON
// protocol read to keep the old codes), the HTTP status and who is at fault. Backend errors
// map here in one exhaustive switch over api::reason(); errors the front finds itself (the
// shape of a request, batches, unknown actions) are named by front_error.
#pragma once

#include <string>
#include <string_view>

#include "backend/api/common.h"

namespace sluice::gateway::sqs {

struct sqs_error {
    unsigned status = 400;
    /// A shape of the API model ("QueueDoesNotExist": com.amazonaws.sqs#...), or a full type
    /// ("com.amazon.coral.service#UnknownOperationException").
    std::string json_type;
    std::string query_code;
    bool sender = true;
    std::string message;
};

/// What the front refuses before calling the backend.
enum class front_error {
    missing_parameter,         // a required parameter is absent
    invalid_parameter_value,   // a parameter of the wrong type or out of range
    invalid_action,            // an action SQS does not have
    missing_action,            // no action named
    malformed_json,            // a JSON body that does not parse, or is not an object
    malformed_query,           // a form body or query string that does not decode
    empty_batch,               // a batch without entries
    too_many_entries,          // a batch of more than 10
    ids_not_distinct,          // two entries of a batch with one Id
    invalid_batch_entry_id,    // an Id outside 1-80 of [A-Za-z0-9_-]
    batch_too_long,            // a batch's messages together over 1 MiB
    invalid_address,           // a QueueUrl that names no queue
    unsupported_operation,     // recognised but not possible (list attribute values)
};

sqs_error to_sqs(front_error e, std::string message);
/// SQS's RequestThrottled (400; the throttling code the AWS SDKs retry with back-off): the
/// principal is over its client quota.
sqs_error request_throttled(std::string message);
/// AWS's AccessDenied (an ACL refused the action): 400, AccessDeniedException in JSON.
sqs_error access_denied(std::string message);
/// The error of a backend answer (its message, or the code's own when empty).
sqs_error to_sqs(const backend::api::backend_error& e);

}  // namespace sluice::gateway::sqs
