// The client side of SASL (owned by auth/sasl), for the gateway's own logins to an upstream
// Kafka cluster (the Kafka proxy's upstream connections): PLAIN (RFC 4616) and SCRAM-SHA-256/512
// (RFC 5802, RFC 7677, as Kafka speaks it: KIP-84, no channel binding). A step-wise state
// machine like sasl_server: start() gives the first client message, step() takes each server
// message and gives the next, until done or failed. Knows nothing of sockets or Kafka framing.
//
//   PLAIN   start: "\0USER\0PASSWORD"                          (one message; done on any reply)
//   SCRAM   start: "n,,n=USER,r=CNONCE"  -> server-first  -> "c=biws,r=NONCE,p=PROOF"
//                                        -> server-final "v=SIGNATURE" (checked)  -> done
//   OAUTHBEARER start: "n,,^Aauth=Bearer TOKEN^A^A"            (done on an empty reply)
//
// Not thread-safe (one login on one connection); never throws for any server input.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::auth {

/// What one client step decided.
struct sasl_client_step {
    enum class outcome {
        send,    // send `message`, expect another server message
        done,    // the exchange is complete on the client side (`message` empty)
        failure, // the server's message was wrong: `reason` says why (no secrets)
    };
    outcome what = outcome::failure;
    std::string message;
    std::string reason;
};

class sasl_client {
public:
    virtual ~sasl_client() = default;
    /// Kafka's name: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER.
    virtual std::string_view mechanism() const = 0;
    /// The first client message.
    virtual std::string start() = 0;
    /// Consumes one server message (the SaslAuthenticate reply).
    virtual sasl_client_step step(std::string_view server_message) = 0;
};

/// A login as `user` with `password` (OAUTHBEARER: `password` is the token, `user` unused), or
/// null for a mechanism the client side does not speak.
/// `client_nonce` empty: a random one (tests pass RFC 7677's to replay its example).
std::unique_ptr<sasl_client> make_sasl_client(std::string_view mechanism, std::string user,
                                              std::string password,
                                              std::string client_nonce = {});

}  // namespace sluice::auth
