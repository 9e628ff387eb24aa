// The queue views of the HTTP front, for the console and for scripts: GET /v1/queues (every
// queue with its depth, in flight, delayed, oldest message age and its dead-letter queue's
// depth), GET /v1/queues/{queue}, POST /v1/queues/{queue}/redrive (starts a message move task
// out of a dead-letter queue) and GET /v1/queues/{queue}/move-tasks, as JSON. Written against
// backend/api/queues.h only; thread-safe as the queues interface is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "gateway/httpcore/router.h"

#include "backend/api/queues.h"
#include "gateway/policy/front_acls.h"

namespace sluice::gateway {

/// The body of POST /v1/queues/{queue}/redrive: both fields optional.
struct redrive_request {
    /// A queue to move the messages to; by default each goes back to the queue it came from.
    std::optional<std::string> destination;
    std::optional<std::int32_t> max_per_second;
};

/// Reads a redrive body: empty (or only whitespace) is the default request; otherwise a JSON
/// object with "destination" (string) and "max_per_second" (integer 1-500), nothing else.
/// Answers a message for the client when the body is not that.
std::variant<redrive_request, std::string> parse_redrive_request(std::string_view body);

/// Registers GET /v1/queues, GET /v1/queues/{queue}, POST /v1/queues/{queue}/redrive and
/// GET /v1/queues/{queue}/move-tasks (HEAD implied for the GETs). Errors are
/// {"error_code":<status>,"message":"..."}: 404 for an unknown queue, 400 for a bad body or a
/// queue that is not a dead-letter queue, 409 while a move task already runs on the queue.
/// With the authorizer on, GET /v1/queues lists the queues whose topic the principal may
/// DESCRIBE (as SQS's ListQueues does); the other routes are checked by the router's guard.
void add_queue_routes(router& routes, backend::api::queues& queues, front_authorizer acl = {});

}  // namespace sluice::gateway
