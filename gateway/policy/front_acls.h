// ACL checks of the HTTP, WebSocket, SSE and SQS fronts (issue 12): what each front action
// asks the one authorizer the Kafka front uses, as Kafka operations on topics, groups and the
// cluster, so that one ACL set governs a topic on every front. docs/security.md has the table;
// the *_checks functions below are that table (pure, unit-tested in
// tests/gateway/front_acls_test.cc).
//
// front_authorizer is a small value (a pointer) shared by every handler; it tests one bool
// when the authorizer is off. Thread-safe as auth::authorizer is.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/verb.hpp>

#include "gateway/core/param_list.h"

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

class front_authorizer {
public:
    front_authorizer() = default;
    /// Null, or an authorizer that is off, allows everything.
    explicit front_authorizer(const auth::authorizer* a)
        : authz_(a != nullptr && a->enabled() ? a : nullptr) {}

    bool on() const { return authz_ != nullptr; }
    bool allowed(std::string_view principal, std::string_view host, auth::acl_operation op,
                 auth::resource_type type, std::string_view name) const {
        return authz_ == nullptr || authz_->allowed(principal, host, op, type, name);
    }
    bool allowed(std::string_view principal, std::string_view host, const acl_check& c) const {
        return allowed(principal, host, c.op, c.type, c.name);
    }
    /// The first of `checks` denied, or nullopt when all pass.
    std::optional<acl_check> denied(std::string_view principal, std::string_view host,
                                    const acl_checks& checks) const;

private:
    const auth::authorizer* authz_ = nullptr;
};

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
