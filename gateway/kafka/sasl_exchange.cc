#include "gateway/kafka/sasl_exchange.h"

#include <chrono>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/kafka/logger.h"

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

}  // namespace

asio::awaitable<auth::sasl_step> sasl_exchange_step(services* svc, const connection_info* conn,
                                                    connection_security* sec, std::string token) {
    const std::string mechanism(sec->sasl->mechanism());
    auth::sasl_step step = sec->sasl->step(token);
    const std::string address = conn->peer.address().to_string();
    switch (step.what) {
        case auth::sasl_step::outcome::challenge:
            break;
        case auth::sasl_step::outcome::success:
            sec->sasl.reset();
            sec->raw_sasl_tokens = false;
            sec->principal = "User:" + step.user;
            svc->auth_failures.record_success(address);
            auth_log().debug("conn {} from {}: authenticated as {} with {}", conn->id, address,
                             sec->principal, mechanism);
            break;
        case auth::sasl_step::outcome::failure: {
            sec->sasl.reset();
            sec->raw_sasl_tokens = false;
            auth_log().warn("conn {}: authentication failed: user '{}' from {} with {}: {}",
                            conn->id, loggable_user_name(step.user), address, mechanism,
                            step.reason);
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
