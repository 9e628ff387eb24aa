// SQS authentication (sqs.authentication=sigv4): every request must carry an AWS Signature
// Version 4 (Authorization header or presigned query) made with an access key of
// DATA_DIR/aws-keys; the principal is User:<the key's user>. Refusals use AWS's codes in the
// request's protocol (JSON __type, Query <Code>, x-amzn-query-error). Failures are logged
// (no secret, no signature) and slowed down per address like failed SASL logins.
//
// A signature covers the body's SHA-256, so it is verified once the body is in (check). What
// the header alone proves is refused before the body is read (check_header, the SQS listener's
// router guard): no signature at all, a malformed one, an unknown access key, a date out of
// range, a presigned request with an X-Amz-Target header. What ends in SignatureDoesNotMatch
// waits for the body (a credential scoped to another service among them).
// Owned by gateway/sqs; built once by sqs_server; thread-safe (const after start).
#pragma once

#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "auth/authorizer.h"
#include "auth/aws_key_store.h"
#include "auth/failure_limiter.h"
#include "auth/sigv4.h"
#include "gateway/httpcore/router.h"
#include "gateway/core/metrics.h"
#include "gateway/sqs/errors.h"

namespace sluice::gateway {
class quota_meter;
}

namespace sluice::gateway::sqs {

/// What the SQS listener authenticates with; `keys` null means authentication is off. `authz`
/// (the Kafka front's authorizer; null or off: no ACL checks) authorizes each action.
struct sqs_auth_config {
    const auth::aws_key_store* keys = nullptr;
    auth::failure_limiter* failures = nullptr;
    const auth::authorizer* authz = nullptr;
    /// The client quotas (SendMessage(Batch) bytes as produce, ReceiveMessage as fetch); null:
    /// none.
    quota_meter* quotas = nullptr;
};

class sqs_authenticator {
public:
    sqs_authenticator(sqs_auth_config config, metrics_registry& metrics)
        : config_(config), metrics_(metrics) {}

    bool enabled() const { return config_.keys != nullptr; }

    /// Nullopt when the request may proceed (`*principal` set: "User:NAME", or
    /// "User:ANONYMOUS" when authentication is off), otherwise the error to answer.
    boost::asio::awaitable<std::optional<sqs_error>> check(const http_request_context& ctx,
                                                           std::string* principal) const;

    /// The part of check() that the request's header decides, run before its body is read:
    /// nullopt when the body may be read (the signature is then verified over it by check()),
    /// otherwise the error to answer, logged, audited and slowed down as check()'s.
    boost::asio::awaitable<std::optional<sqs_error>> check_header(
        const http_request_context& ctx) const;

private:
    /// Logs, audits and slows down a refusal of `outcome` (an error), and returns its answer.
    boost::asio::awaitable<sqs_error> refuse(const http_request_context& ctx,
                                             auth::sigv4_outcome outcome) const;

    sqs_auth_config config_;
    metrics_registry& metrics_;
};

}  // namespace sluice::gateway::sqs
