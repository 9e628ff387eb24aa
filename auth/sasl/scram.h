// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) on the server, as Kafka speaks them
// (KIP-84): no channel binding (gs2 header "n,," or "n,a=USER,"), extensions after the nonce
// ignored except Kafka's tokenauth, which is refused (no delegation tokens here).
//
//   client-first  n,,n=USER,r=CNONCE                     -> challenge
//   server-first  r=CNONCE+SNONCE,s=SALT,i=ITERATIONS
//   client-final  c=biws,r=CNONCE+SNONCE,p=PROOF          -> success or failure
//   server-final  v=SERVER_SIGNATURE
//
// A user who does not exist gets a server-first message built from a decoy credential (a salt
// derived from the store's decoy key and the name), and the exchange fails at the proof like a
// wrong password: the answers do not tell whether a user exists.
#pragma once

#include <string>

#include "auth/credential_store.h"
#include "auth/sasl/sasl_server.h"

namespace sluice::auth {

/// One SCRAM exchange. Lifecycle and concurrency: see sasl_server.
class scram_server final : public sasl_server {
public:
    /// `server_nonce` empty: a random one (tests pass RFC 7677's to replay its example).
    scram_server(hash_algorithm h, const credential_store& users, std::string server_nonce = {});

    std::string_view mechanism() const override;
    sasl_step step(std::string_view client_message) override;

private:
    enum class state { client_first, client_final, done };

    sasl_step on_client_first(std::string_view message);
    sasl_step on_client_final(std::string_view message);
    sasl_step fail(std::string client_error, std::string reason);

    hash_algorithm hash_;
    const credential_store& users_;
    state state_ = state::client_first;
    std::string server_nonce_;
    std::string user_;
    bool known_user_ = false;
    scram_credential credential_;
    std::string gs2_header_;
    std::string client_first_bare_;
    std::string server_first_;
    std::string nonce_;  // client nonce + server nonce
};

/// SCRAM's saslname decoding: "=2C" is ',' and "=3D" is '='; nullopt for any other '='.
std::optional<std::string> decode_sasl_name(std::string_view name);

}  // namespace sluice::auth
