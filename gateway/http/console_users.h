// The console's users routes (/v1/console/users): the SASL users of the Kafka front (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512), listed, created, given a new password and deleted, as Kafka's
// DescribeUserScramCredentials (DESCRIBE on the cluster) and AlterUserScramCredentials (ALTER
// on the cluster) allow (gateway/policy/front_acls.cc). A change goes to the same credential
// store the Kafka handler changes and is in force at once: native mode saves the store's file
// (DATA_DIR/credentials); upstream mode hands it to a shared_users (the server's, which writes
// the cluster's _sluice_security, so that every gateway of the fleet sees it) and then applies
// it here. Passwords are never logged nor answered; each change is audited.
#pragma once

#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "auth/credential_store.h"
#include "gateway/httpcore/router.h"

namespace sluice::gateway {

/// Where a user change is stored when it is not this gateway's own file: upstream mode's
/// shared security state. Implemented by the server (gateway/server), which owns the cluster.
class shared_users {
public:
    virtual ~shared_users() = default;
    /// Stores the new credentials of `user` (nullopt: deleted) where every gateway reads them,
    /// and returns once the cluster has stored them. Throws std::runtime_error with the reason
    /// when it cannot.
    virtual boost::asio::awaitable<void> store(std::string user,
                                               std::optional<auth::user_credentials> creds) = 0;
};

struct console_user_services {
    auth::credential_store& users;
    /// Upstream mode: where changes go first; null in native mode (the store's file).
    shared_users* shared = nullptr;
};

/// The SCRAM iteration bounds a console user may get: Kafka's AlterUserScramCredentials's.
constexpr int console_min_iterations = auth::min_scram_iterations;
constexpr int console_max_iterations = 16384;

/// Registers, answering JSON (errors {"error_code": <status>, "message": "..."}):
/// - GET /v1/console/users: {"users": [{"name", "mechanisms": [{"mechanism", "iterations"}]}]}
///   sorted by name;
/// - POST /v1/console/users {"name", "password", "mechanisms": ["PLAIN", "SCRAM-SHA-256",
///   "SCRAM-SHA-512"] (default all three), "iterations" (default 4096, as `sluice users`)}:
///   201; 409 when the user exists;
/// - PUT /v1/console/users/{user} {"password", "mechanisms" (default the user's),
///   "iterations"}: a new password, 200; 404 for an unknown user;
/// - DELETE /v1/console/users/{user}: 204; 404 for an unknown user.
void add_console_user_routes(router& routes, console_user_services svc);

}  // namespace sluice::gateway
