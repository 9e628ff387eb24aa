// SASL OAUTHBEARER (RFC 7628) on the server, as Kafka speaks it (KIP-255): one client message
//
//   gs2-header  kvsep  *(key=value kvsep)  kvsep        kvsep = 0x01
//   n,,\x01auth=Bearer <JWT>\x01\x01                     (or n,a=USER,\x01...)
//
// whose bearer token must verify (auth/jwt); the principal is the token's subject claim. Kafka
// answers a bad token with an error challenge and fails on the client's next message; sluice
// fails at once (SaslAuthenticate carries the reason), which clients treat alike.
#pragma once

#include "auth/jwt/jwt.h"
#include "auth/sasl/sasl_server.h"

namespace sluice::auth {

/// One OAUTHBEARER exchange. Lifecycle and concurrency: see sasl_server.
class oauthbearer_server final : public sasl_server {
public:
    /// `verifier` null: every login fails (no keys are configured).
    explicit oauthbearer_server(const jwt_verifier* verifier) : verifier_(verifier) {}

    std::string_view mechanism() const override { return "OAUTHBEARER"; }
    sasl_step step(std::string_view client_message) override;

private:
    const jwt_verifier* verifier_;
    bool done_ = false;
};

}  // namespace sluice::auth
