#include "gateway/sqs/sqs_auth.h"

#include <chrono>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "auth/sigv4.h"
#include "gateway/core/logger.h"
#include "gateway/policy/audit.h"
#include "gateway/policy/auth_settings.h"

namespace sluice::gateway::sqs {
namespace asio = boost::asio;

namespace {

/// Printable ASCII, at most 128 bytes: an access key id as it may appear in a log line.
std::string loggable(std::string_view s) {
    std::string out;
    for (unsigned char c : s.substr(0, 128)) {
        out.push_back(c < 0x20 || c >= 0x7f ? '?' : static_cast<char>(c));
    }
    return out;
}

/// SQS's rules: the body is always signed (no UNSIGNED-PAYLOAD), and a presigned URL's action
/// and parameters are its signed query's only.
constexpr auth::sigv4_rules sqs_rules{.unsigned_payload = false, .presigned_query_only = true};

/// What SigV4 covers of ctx's request, its body left out.
auth::sigv4_request sigv4_request_of(const http_request_context& ctx) {
    auth::sigv4_request req;
    req.method = std::string(ctx.req.method_string());
    const auto raw_target = ctx.req.target();
    const std::string_view target(raw_target.data(), raw_target.size());
    const auto q = target.find('?');
    req.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) {
        req.query = std::string(target.substr(q + 1));
    }
    for (const auto& field : ctx.req) {
        req.headers.emplace_back(std::string(field.name_string()),
                                 std::string(field.value()));
    }
    return req;
}

}  // namespace

asio::awaitable<std::optional<sqs_error>> sqs_authenticator::check(
    const http_request_context& ctx, std::string* principal) const {
    *principal = ctx.principal;  // the connection's: a TLS client certificate's, or anonymous
    if (!enabled()) {
        co_return std::nullopt;
    }
    auto req = sigv4_request_of(ctx);
    req.body = ctx.req.body();
    auto outcome = auth::verify_sigv4(req, *config_.keys, "sqs", std::chrono::system_clock::now(),
                                      sqs_rules);
    if (outcome.error == auth::sigv4_error::none) {
        count_authentication(metrics_, "sqs", "sigv4", true);
        if (config_.failures != nullptr) {
            config_.failures->record_success(ctx.peer.address().to_string());
        }
        *principal = "User:" + outcome.user;
        co_return std::nullopt;
    }
    co_return co_await refuse(ctx, std::move(outcome));
}

asio::awaitable<std::optional<sqs_error>> sqs_authenticator::check_header(
    const http_request_context& ctx) const {
    if (!enabled()) {
        co_return std::nullopt;
    }
    // Verified as if the body were empty: every check before the signature's own is on the
    // header, and a signature that does not match may still match the real body.
    auto outcome = auth::verify_sigv4(sigv4_request_of(ctx), *config_.keys, "sqs",
                                      std::chrono::system_clock::now(), sqs_rules);
    if (outcome.error == auth::sigv4_error::none ||
        outcome.error == auth::sigv4_error::signature_does_not_match) {
        co_return std::nullopt;
    }
    auth_log().debug("sqs: request from {} refused on its header, before its body",
                     ctx.peer.address().to_string());
    co_return co_await refuse(ctx, std::move(outcome));
}

asio::awaitable<sqs_error> sqs_authenticator::refuse(const http_request_context& ctx,
                                                     auth::sigv4_outcome outcome) const {
    const std::string address = ctx.peer.address().to_string();
    const std::string code(auth::sigv4_error_code(outcome.error));
    if (outcome.error != auth::sigv4_error::missing_authentication_token) {
        // The reason for the log and the audit: AWS's message, and what exactly failed when
        // that message is AWS's general one.
        const std::string reason =
            code + ": " + outcome.message +
            (outcome.detail.empty() ? std::string() : " (" + outcome.detail + ")");
        count_authentication(metrics_, "sqs", "sigv4", false);
        auth_log().warn("sqs: authentication failed: access key '{}' (user '{}') from {} with "
                        "SigV4 ({}): {}",
                        loggable(outcome.access_key_id), outcome.user, address, outcome.form,
                        reason);
        audit_authentication_failed(
            audit_source{"User:ANONYMOUS", audit_client_of(ctx.peer), "sqs"}, "SigV4",
            outcome.access_key_id, reason);
        if (config_.failures != nullptr) {
            const auto delay =
                config_.failures->record_failure(address, std::chrono::steady_clock::now());
            if (delay.count() > 0) {
                asio::steady_timer timer(ctx.executor, delay);
                boost::system::error_code ec;
                co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            }
        }
    } else {
        auth_log().debug("sqs: request from {} without a signature: {}", address, code);
    }
    sqs_error e;
    e.status = auth::sigv4_error_status(outcome.error);
    e.json_type = "com.amazon.coral.service#" + code;
    e.query_code = code;
    e.sender = true;
    e.message = outcome.message;
    co_return e;
}

}  // namespace sluice::gateway::sqs
