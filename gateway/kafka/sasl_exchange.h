// The Kafka front's side of a SASL login, shared by SaslAuthenticate (KIP-152) and the bare
// token frames that follow a SaslHandshake v0 (KIP-43): feeds one client token to the
// connection's exchange and acts on the outcome (principal set, or failure logged and slowed).
#pragma once

#include <string>

#include <boost/asio/awaitable.hpp>

#include "auth/sasl/sasl_server.h"
#include "gateway/kafka/request_context.h"

namespace sluice::gateway {

/// One step of the exchange in `sec->sasl` (which must be set). On success the connection's
/// principal becomes "User:NAME" and the exchange ends; on failure the exchange ends, one line
/// is logged on the "auth" logger (user as sent, client address, mechanism, reason; never a
/// secret), and after repeated failures from the address the answer waits a little
/// (auth::failure_limiter). Runs on the connection's thread; pointers must outlive it.
boost::asio::awaitable<auth::sasl_step> sasl_exchange_step(services* svc,
                                                           const connection_info* conn,
                                                           connection_security* sec,
                                                           std::string token);

}  // namespace sluice::gateway
