// SASL PLAIN (RFC 4616) on the server: one client message "authzid NUL authcid NUL passwd",
// checked against the user's salted PLAIN verifier (or, for a user changed through
// AlterUserScramCredentials, which carries no password, against its SCRAM-SHA-512 credential).
// Only for connections the operator trusts not to be read by others (the password crosses the
// wire as it is).
#pragma once

#include "auth/credential_store.h"
#include "auth/sasl/sasl_server.h"

namespace sluice::auth {

/// One PLAIN exchange. Lifecycle and concurrency: see sasl_server.
class plain_server final : public sasl_server {
public:
    explicit plain_server(const credential_store& users) : users_(users) {}

    std::string_view mechanism() const override { return "PLAIN"; }
    sasl_step step(std::string_view client_message) override;

private:
    const credential_store& users_;
    bool done_ = false;
};

}  // namespace sluice::auth
