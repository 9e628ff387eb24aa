// AWS Signature Version 4 verification (the SQS front): the Authorization-header form and the
// presigned query form (X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, X-Amz-Expires,
// X-Amz-SignedHeaders, X-Amz-Signature). The server rebuilds the canonical request from what
// it received, derives the signing key from the access key's secret (for the date, region and
// service of the credential scope) and compares signatures in constant time. Requests more
// than 15 minutes from the server's clock are refused.
//
// The signature covers the body through its SHA-256, which the server computes from the bytes
// it received: an X-Amz-Content-Sha256 header is only compared with it (a header that
// disagrees is SignatureDoesNotMatch), never trusted in its place. `UNSIGNED-PAYLOAD` is
// refused unless the service's rules allow it (SQS's do not). An X-Amz-Target header (the AWS
// JSON protocol's action) must be signed. Under SQS's rules a presigned request carries its
// action and parameters in the signed query only: one with a body or an X-Amz-Target header is
// refused. An untouched request replayed within the 15 minutes verifies, as on AWS (SigV4 has
// no nonce; TLS keeps requests from being captured).
//
// Owned by auth/; stateless, thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auth/aws_key_store.h"

namespace sluice::auth {

/// What SigV4 covers of one HTTP request, as received.
struct sigv4_request {
    std::string method;
    /// The path, still percent-encoded, without the query.
    std::string path;
    /// The raw query string (after '?'), still percent-encoded.
    std::string query;
    /// Every header; names in any case.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
};

/// Why a request was refused, in AWS's error codes.
enum class sigv4_error {
    none,
    missing_authentication_token,  // neither form of signature is present (403)
    incomplete_signature,          // a signature with parts missing or malformed (400)
    invalid_client_token_id,       // the access key id is unknown (403)
    signature_does_not_match,      // the signature is wrong (403)
    request_expired,               // the date is more than 15 minutes off, or presign expired (400)
    invalid_parameter_combination,  // a presigned request with a body or X-Amz-Target (400)
};

/// AWS's code ("SignatureDoesNotMatch") and HTTP status for `e`.
std::string_view sigv4_error_code(sigv4_error e);
unsigned sigv4_error_status(sigv4_error e);

struct sigv4_outcome {
    sigv4_error error = sigv4_error::none;
    /// For the client (AWS's wording; never the secret or the expected signature).
    std::string message;
    /// For the log only, when `message` is AWS's general wording: what exactly did not match
    /// (empty when `message` says it all).
    std::string detail;
    /// The key's user when verified; the access key id as sent either way (for the log).
    std::string user;
    std::string access_key_id;
    /// "Authorization" or "query" (the form used), for the log.
    std::string form;
};

/// The 15-minute limit between a request's X-Amz-Date and the server's clock.
constexpr std::chrono::minutes sigv4_max_skew{15};

/// What a service accepts beyond the rules every service shares. The defaults are SQS's.
struct sigv4_rules {
    /// Whether `UNSIGNED-PAYLOAD` may stand for the body's hash (S3 over TLS; not SQS).
    bool unsigned_payload = false;
    /// Whether a presigned request takes its action and parameters from the signed query
    /// only, so that a body or an X-Amz-Target header is refused (SQS; S3's presigned PUT
    /// carries a body).
    bool presigned_query_only = true;
};

sigv4_outcome verify_sigv4(const sigv4_request& req, const aws_key_store& keys,
                           std::string_view service,
                           std::chrono::system_clock::time_point now =
                               std::chrono::system_clock::now(),
                           const sigv4_rules& rules = {});

// The steps of the algorithm, for tests against AWS's published examples.

/// AWS's URI encoding: unreserved characters (A-Z a-z 0-9 - _ . ~) stay, every other byte
/// becomes %XX (upper-case hex); '/' stays when `keep_slash`.
std::string sigv4_uri_encode(std::string_view s, bool keep_slash);
/// The canonical query string: every parameter decoded and re-encoded, sorted by name then
/// value, joined with '&'; `skip` (X-Amz-Signature) left out.
std::string sigv4_canonical_query(std::string_view raw_query, std::string_view skip = {});
std::string sigv4_canonical_request(const sigv4_request& req,
                                    const std::vector<std::string>& signed_headers,
                                    std::string_view payload_hash, std::string_view skip_param);
std::string sigv4_string_to_sign(std::string_view amz_date, std::string_view scope,
                                 std::string_view canonical_request);
std::string sigv4_signing_key(std::string_view secret, std::string_view date,
                              std::string_view region, std::string_view service);
std::string hex_lower(std::string_view bytes);

}  // namespace sluice::auth
