// ACLs on the requests the Kafka proxy forwards (owned by gateway/proxy): with the authorizer on,
// each request is decoded only as far as naming what it touches (topics, groups, transactional
// ids, the cluster), the policy chain decides every access (the same authorizer, audit and
// answers as the broker mode's handlers: gateway/kafka/handlers/*::declare), and the request is
// forwarded, forwarded without its denied part, or answered here, as a broker answers:
//
//   every access allowed          -> forwarded untouched
//   some entries denied           -> forwarded without them; the upstream's answer gets the
//   (topics of a Produce, Fetch,      denied entries added (TOPIC_/GROUP_AUTHORIZATION_FAILED
//    ListOffsets, ...)                per partition), as Kafka's KafkaApis serves the allowed
//                                     part and fails the rest
//   the whole request denied      -> answered here, nothing forwarded (a denied group or
//   (a group, a transactional id)     transactional id fails the whole request in Kafka too)
//   a Produce with acks=0 denied  -> the connection closes (Kafka's signal: no answer is due)
//   Metadata                      -> forwarded; a named topic denied DESCRIBE comes back with
//                                     TOPIC_AUTHORIZATION_FAILED, an all-topics answer omits
//                                     the topics the principal may not describe
//   authorized operations         -> (Metadata, DescribeGroups, DescribeCluster) answered for
//                                     the client's principal, not the gateway's upstream account
//
// An API whose request the proxy cannot name resources in is refused with the authorizer on:
// not advertised in ApiVersions and answered UNSUPPORTED_VERSION (never forwarded unchecked);
// where only newer versions name resources by id or in batches (Fetch v13+, DeleteTopics v6+,
// OffsetFetch v8+, AddPartitionsToTxn v4+), those versions are not offered; a Metadata topic
// named by id only is checked under the empty name (denied unless a wildcard allows it).
//
// Pure: no sockets, no logging (the chain audits and logs denials); tested per API in
// tests/gateway/proxy_acls_test.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "gateway/policy/chain.h"
#include "gateway/proxy/response_rewrite.h"
#include "protocol/core/bytes.h"
#include "protocol/core/result.h"

namespace sluice::gateway::proxy {

/// How the proxy treats an API when the authorizer is on.
enum class acl_class : std::uint8_t {
    open,     ///< nothing to authorize (ApiVersions, the SASL login): forwarded
    checked,  ///< its request names what it touches: decoded and decided (check_request)
    refused,  ///< not advertised, answered UNSUPPORTED_VERSION
};

acl_class classify_api(std::int16_t api_key);

/// What is offered for `api_key` with the authorizer on: `r` narrowed to the versions the proxy
/// names resources in; nullopt for a refused API (an offered_apis::narrowing).
std::optional<version_range> authorized_versions(std::int16_t api_key, version_range r);

/// Adds the denied part to the upstream's response body (after the response header) of a
/// request forwarded without it, or filters what the principal may not see: the new body.
using response_merge = std::function<result<protocol::byte_buffer>(
    protocol::bytes_view body, std::shared_ptr<const void> owner)>;

struct acl_decision {
    enum class action : std::uint8_t {
        forward,           ///< the request as read (`merge` may filter the answer)
        forward_filtered,  ///< `frame` instead (the denied part removed); `merge` adds it back
        answer,            ///< `frame` is the whole answer (size prefix included)
        close,             ///< no answer is due (acks=0): the connection closes
    };
    action what = action::forward;
    protocol::writer frame;
    response_merge merge;
    /// Accesses refused (audited by the chain).
    std::size_t denied = 0;
};

/// Decides one request (`request`: its frame after the size prefix, header included, owned by
/// `owner`) for `who` (its client_id is taken from the header). An error: the request does
/// not decode (the caller closes the connection, as a broker does).
result<acl_decision> check_request(const policy_chain& chain, requester who,
                                   protocol::bytes_view request,
                                   std::shared_ptr<const void> owner);

}  // namespace sluice::gateway::proxy
