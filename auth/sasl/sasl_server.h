// The server side of one SASL exchange, as a step-wise state machine: the transport (the Kafka
// front's SaslAuthenticate, later HTTP) feeds each client message to step() and sends back what
// it returns, until the outcome is success or failure. Owned by auth/sasl.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::auth {

class credential_store;
class jwt_verifier;

/// What one step decided.
struct sasl_step {
    enum class outcome {
        challenge,  // send `reply`, expect another client message
        success,    // send `reply` (may be empty); `user` is authenticated
        failure,    // the exchange is over; send `client_error`, log `reason`
    };
    outcome what = outcome::failure;
    std::string reply;
    /// The user the client claimed (success: authenticated; failure: as sent, for the log).
    std::string user;
    /// For the client: says what was malformed, or only that credentials were invalid (never
    /// whether the user exists).
    std::string client_error;
    /// For the server's log: why it failed (no secrets).
    std::string reason;
    /// Success with a credential that expires (OAUTHBEARER: the token's exp), in seconds since
    /// the epoch; 0 when the credential does not expire.
    std::int64_t expires_at_s = 0;
};

/// One exchange for one connection. Created when the client picks its mechanism; not
/// thread-safe (a connection uses it on its own thread). After success or failure every
/// further step fails.
class sasl_server {
public:
    virtual ~sasl_server() = default;
    /// Kafka's name for the mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER.
    virtual std::string_view mechanism() const = 0;
    /// Consumes one client message. Never throws for any input.
    virtual sasl_step step(std::string_view client_message) = 0;
};

/// The mechanisms this module implements, in Kafka's names.
const std::vector<std::string>& supported_sasl_mechanisms();

/// A fresh exchange for `mechanism` against `users` (PLAIN, SCRAM) or `tokens` (OAUTHBEARER;
/// null: no keys configured, every login fails), or null when the mechanism is unknown. Both
/// must outlive the exchange.
std::unique_ptr<sasl_server> make_sasl_server(std::string_view mechanism,
                                              const credential_store& users,
                                              const jwt_verifier* tokens = nullptr);

}  // namespace sluice::auth
