// The SQS front (owned by gateway/sqs): one HTTP request in, one SQS answer out. It tells the
// two wire protocols apart by the request (an `X-Amz-Target: AmazonSQS.<Action>` header means
// AWS JSON 1.0; otherwise the Query protocol, with `Action=` in a form body or the query
// string), reads the request into a protocol::sqs::request_view, runs the action's handler
// (actions.h) and renders its answer or its error in the same protocol, with an
// x-amzn-RequestId header and, for errors, x-amzn-query-error.
//
//   http_connection ──router's guard──> sqs_front::admit   (the header: Origin, SigV4's
//                  │                                       header checks; body not read yet)
//                  └─router──> sqs_front::handle ──> action handler ──> api::queues
//
// With sqs.authentication=sigv4 every request is checked first (sqs_auth.h: what the header
// decides in admit(), the signature over the body in handle()); with
// authorizer.enabled=true each action then passes its ACL checks (gateway/policy/front_acls.h)
// and its client quotas, both through the policy chain (gateway/policy/chain.h).
//
// Lifecycle: built by sqs_server at start-up, read-only afterwards. Concurrency: handle() runs
// on each connection's executor; the front itself keeps no per-request state.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "backend/api/queues.h"
#include "gateway/httpcore/router.h"
#include "gateway/core/metrics.h"
#include "gateway/sqs/actions.h"
#include "gateway/sqs/sqs_auth.h"
#include "gateway/sqs/sqs_forward.h"

namespace sluice::gateway::sqs {

class sqs_front {
public:
    sqs_front(backend::api::queues& queues, sqs_settings settings, metrics_registry& metrics,
              sqs_auth_config auth = {});

    /// The route handler of every path.
    boost::asio::awaitable<handler_result> handle(http_request_context ctx);

    /// The router's guard, on the request's header alone (its body is not read yet): the
    /// refusals the header decides (a browser Origin that is not allowed, then
    /// sqs_authenticator::check_header), in the request's protocol; nullopt lets the body be
    /// read and handle() run.
    boost::asio::awaitable<std::optional<http_response>> admit(http_request_context* ctx) const;

    /// The answer to a request the connection refused before routing (413, 431, 400), or
    /// whose body found no room in the body budget in time (503 ServiceUnavailable, which the
    /// SDKs retry): an SQS error in the Query protocol's shape, which clients of both
    /// protocols report.
    http_response connection_error(unsigned status, std::string_view message) const;

    const sqs_settings& settings() const { return settings_; }

    /// Asked first for every request (upstream mode's fleet: the owner of the queues serves
    /// them, the other gateways forward); null, as by default: every request is served here.
    /// Set before the listener starts; must outlive the front.
    void set_forwarder(sqs_forwarder* f) { forwarder_ = f; }

private:
    struct action_entry {
        action_handler handler;
        bool has_result;
    };
    http_response render_error(protocol::sqs::wire w, const std::string& action,
                               const sqs_error& e, const std::string& request_id) const;
    counter& requests_for(const std::string& action);
    /// The accesses `action` needs (sqs_action_checks and where it makes sluice write later),
    /// into `checks`; false when a parameter they need is missing (the handler answers
    /// MissingParameter, so the request is not refused here).
    bool action_checks(const std::string& action, const protocol::sqs::request_view& view,
                       acl_checks& checks, acl_checks& writes) const;
    /// The queues whose RedrivePolicy names `queue` (where a move task without a destination
    /// writes), from the backend's views (no wait).
    std::vector<std::string> dead_letter_sources(std::string_view queue) const;

    backend::api::queues& queues_;
    sqs_settings settings_;
    metrics_registry& metrics_;
    std::map<std::string, action_entry, std::less<>> actions_;
    std::map<std::string, counter*, std::less<>> request_counters_;
    std::map<std::string, histogram*, std::less<>> action_seconds_;
    counter& errors_;
    counter& unknown_requests_;
    sqs_authenticator auth_;
    /// The policy chain: each action's ACL checks (sqs_action_checks) and its client quotas,
    /// before its handler runs.
    policy_chain chain_;
    sqs_forwarder* forwarder_ = nullptr;
};

}  // namespace sluice::gateway::sqs
