// ACL checks of the HTTP, WebSocket, SSE and SQS fronts (issue 12): what each front action
// asks the one authorizer the Kafka front uses, as Kafka operations on topics, groups and the
// cluster, so that one ACL set governs a topic on every front. docs/security.md has the table;
// the *_checks functions below are that table (pure, unit-tested in
// tests/gateway/front_acls_test.cc). A front turns a table's checks into the policy chain's
// accesses (accesses_of, refused_check) and the chain decides (gateway/policy/chain.h).
//
// Plain values in, plain values out: the table knows route patterns and parameter names
// (core/param_list.h), not the HTTP server's types, so it sits below the fronts.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/verb.hpp>

#include "gateway/core/param_list.h"
#include "gateway/policy/chain.h"

#include "auth/authorizer.h"

namespace sluice::gateway {

/// One check: `op` on the resource `type` named `name`.
struct acl_check {
    auth::acl_operation op = auth::acl_operation::unknown;
    auth::resource_type type = auth::resource_type::unknown;
    std::string name;
    bool operator==(const acl_check&) const = default;
};
using acl_checks = std::vector<acl_check>;

/// "Not authorized to WRITE topic a." (no principal: the caller knows who it is).
std::string denial_message(const acl_check& c);

/// The chain's access for `c` (a view into it: keep `c` alive), refused when denied.
access access_of(const acl_check& c, on_denial d = on_denial::refuse);
/// The chain's accesses for `checks` (views into them), in order.
std::vector<access> accesses_of(const acl_checks& checks, on_denial d = on_denial::refuse);
/// Asks `chain` about `checks` as one all-or-nothing request of `who` (`action`: the audit
/// log's api): nullopt when all pass (at once, building nothing, when the chain does not
/// authorize), else the first refused check, which the chain has audited and logged.
std::optional<acl_check> refused_check(const policy_chain& chain, const requester& who,
                                       std::string_view action, const acl_checks& checks);

/// The front of an HTTP route, for the chain: websocket for /ws, sse for the event streams,
/// console for the console's /v1 routes, rest for the others.
policy_front http_route_front(std::string_view pattern);

/// HTTP routes (REST v2/v3, consumer instances, /v1/groups, /v1/queues, SSE, /ws) checked by
/// the router's guard from the route's pattern, its captures (decoded) and the query (the SSE
/// streams' group). Routes whose resources
/// are in the body or the instance (subscribe, assign, records, commit) or are listings add
/// their checks in the handler; /metrics needs DESCRIBE cluster; open routes (/healthz, /ui...)
/// answer none.
acl_checks http_route_checks(boost::beast::http::verb method, std::string_view pattern,
                             const param_list& params, const param_list& query);

/// The SQS action `action` on the queue `queue` (from QueueUrl or QueueName; empty for
/// ListQueues, which filters by DESCRIBE instead). A queue is its topic of the same name with
/// the consumer group of the same name. Unknown actions answer none (they are refused anyway).
acl_checks sqs_action_checks(std::string_view action, std::string_view queue);
/// The parameter naming an action's queue: "QueueUrl", "QueueName" or "SourceArn"; empty for
/// the actions without one (ListQueues, CancelMessageMoveTask).
std::string_view sqs_queue_parameter(std::string_view action);
/// The queue name in the value of that parameter (a URL's last path segment, an ARN's last
/// field, a QueueName as it is).
std::string sqs_queue_of(std::string_view parameter, std::string_view value);
/// StartMessageMoveTask's DestinationArn, when given: WRITE on the destination queue's topic
/// (the task produces there).
acl_checks sqs_move_destination_checks(std::string_view destination_arn);
/// What a message move task from the dead-letter queue `source` needs: ALTER on the source
/// (sqs_action_checks) and WRITE where it writes: the `destination_arn` when it has one, else
/// every queue in `return_queues` (the queues whose RedrivePolicy names the source: the backend
/// moves a message back only to one of those). StartMessageMoveTask needs it for the task it
/// starts, CancelMessageMoveTask for the task its handle names; the console's redrive too.
acl_checks sqs_move_task_checks(std::string_view source,
                                const std::optional<std::string>& destination_arn,
                                const std::vector<std::string>& return_queues);
/// A RedrivePolicy given to CreateQueue or SetQueueAttributes: WRITE on the topic of its
/// deadLetterTargetArn (of each one, should the JSON repeat the key). Receives then move messages
/// there on behalf of whoever set the policy, so it is checked when the policy is set (not at
/// each receive). None for an absent, empty or unreadable policy (the backend refuses a bad one).
/// A RedriveAllowPolicy writes nowhere (it lets other queues write into this one) and needs
/// nothing beyond the queue's own ALTER_CONFIGS.
acl_checks sqs_redrive_policy_checks(std::string_view redrive_policy);

/// A WebSocket or SSE subscription: READ topic, and READ group when a group is given.
acl_checks subscribe_checks(std::string_view topic, std::string_view group);
/// A WebSocket produce: WRITE topic.
acl_checks produce_checks(std::string_view topic);

}  // namespace sluice::gateway
