#include "gateway/kafka/sasl_exchange.h"

#include <algorithm>
#include <chrono>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/core/logger.h"
#include "gateway/policy/audit.h"
#include "gateway/policy/auth_settings.h"

namespace sluice::gateway {
namespace asio = boost::asio;

namespace {

/// A client-sent user name as it may appear in a log line: printable ASCII, at most 64 bytes.
std::string loggable_user_name(const std::string& name) {
    std::string out;
    for (unsigned char c : name.substr(0, 64)) {
        out.push_back(c < 0x20 || c >= 0x7f ? '?' : static_cast<char>(c));
    }
    if (name.size() > 64) {
        out += "...";
    }
    return out;
}

void audit_sasl_failure(const connection_info* conn, const connection_security* sec,
                        const std::string& mechanism, const auth::sasl_step& step) {
    const std::string address = audit_client_of(conn->peer);
    audit_authentication_failed(
        audit_source{sec->principal.empty() ? std::string("User:ANONYMOUS") : sec->principal,
                     address, "kafka"},
        mechanism, step.user, step.reason);
}

}  // namespace

asio::awaitable<auth::sasl_step> sasl_exchange_step(services* svc, const connection_info* conn,
                                                    connection_security* sec, std::string token) {
    const std::string mechanism(sec->sasl->mechanism());
    auth::sasl_step step = sec->sasl->step(token);
    const std::string address = conn->peer.address().to_string();
    switch (step.what) {
        case auth::sasl_step::outcome::challenge:
            break;
        case auth::sasl_step::outcome::success: {
            sec->sasl.reset();
            sec->raw_sasl_tokens = false;
            const std::string principal = "User:" + step.user;
            if (!sec->principal.empty() && sec->principal != principal) {
                // compat: Kafka refuses a re-authentication that changes the principal.
                step.what = auth::sasl_step::outcome::failure;
                step.client_error =
                    "Authentication failed: re-authentication may not change the principal";
                step.reason = "re-authentication as another principal (was " + sec->principal +
                              ")";
                auth_log().warn("conn {}: authentication failed: user '{}' from {} with {}: {}",
                                conn->id, loggable_user_name(step.user), address, mechanism,
                                step.reason);
                audit_sasl_failure(conn, sec, mechanism, step);
                count_authentication(svc->metrics, "kafka", mechanism, false);
                break;
            }
            const bool reauth = !sec->principal.empty();
            sec->principal = principal;
            sec->mechanism = mechanism;
            // KIP-368: the session lasts connections.max.reauth.ms, or less when the
            // credential expires sooner; with no maximum it does not end.
            const auto now = std::chrono::system_clock::now();
            std::int64_t lifetime_ms = svc->kafka.max_reauth_ms;
            if (lifetime_ms > 0 && step.expires_at_s > 0) {
                const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                                now.time_since_epoch())
                                                .count();
                lifetime_ms = std::max<std::int64_t>(
                    1, std::min(lifetime_ms, step.expires_at_s * 1000 - now_ms));
            }
            sec->session_lifetime_ms = lifetime_ms;
            sec->session_expiry = lifetime_ms > 0
                                      ? connection_security::clock::now() +
                                            std::chrono::milliseconds(lifetime_ms)
                                      : connection_security::clock::time_point{};
            svc->auth_failures.record_success(address);
            count_authentication(svc->metrics, "kafka", mechanism, true);
            auth_log().debug("conn {} from {}: {} as {} with {}{}", conn->id, address,
                             reauth ? "re-authenticated" : "authenticated", sec->principal,
                             mechanism,
                             lifetime_ms > 0
                                 ? fmt::format(", session {} ms", lifetime_ms)
                                 : std::string());
            break;
        }
        case auth::sasl_step::outcome::failure: {
            sec->sasl.reset();
            sec->raw_sasl_tokens = false;
            auth_log().warn("conn {}: authentication failed: user '{}' from {} with {}: {}",
                            conn->id, loggable_user_name(step.user), address, mechanism,
                            step.reason);
            audit_sasl_failure(conn, sec, mechanism, step);
            count_authentication(svc->metrics, "kafka", mechanism, false);
            const auto delay =
                svc->auth_failures.record_failure(address, std::chrono::steady_clock::now());
            if (delay.count() > 0) {
                auto executor = co_await asio::this_coro::executor;
                asio::steady_timer timer(executor, delay);
                boost::system::error_code ec;
                co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            }
            break;
        }
    }
    co_return step;
}

}  // namespace sluice::gateway
