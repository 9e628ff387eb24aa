// What the Kafka proxy changes in the traffic it forwards (owned by gateway/proxy): the
// addresses in upstream responses, the ApiVersions answer, and the answers the proxy gives
// itself. Pure functions over bytes: no sockets, no logging, so that every API and version is
// tested against hand-built upstream responses (tests/gateway/proxy_rewrite_test.cc).
//
// An upstream response is forwarded untouched unless its API carries broker addresses
// (Metadata, FindCoordinator, DescribeCluster; the KIP-951 NodeEndpoints of Produce v10+ and
// Fetch v16+) or is ApiVersions. Those bodies are decoded with protocol/'s codec, their
// addresses replaced by the gateway's (node ids unchanged), and re-encoded; record batches are
// never copied (the codec keeps them as views of the upstream frame and the writer splices
// them). A response that does not decode is malformed: the caller closes that client.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gateway/proxy/sni_host_pattern.h"
#include "protocol/core/bytes.h"
#include "protocol/core/result.h"

namespace sluice::gateway::proxy {

/// One broker of the upstream cluster as its responses name it.
struct upstream_broker {
    std::int32_t node_id = 0;
    std::string host;
    std::int32_t port = 0;
    std::optional<std::string> rack;

    bool operator==(const upstream_broker&) const = default;
};

/// Where the gateway serves upstream node N: `host`, port `port_base + N`; with SNI routing
/// (proxy.sni.host.pattern) the pattern's name for N on the listener's one port, `port_base`.
struct node_addresses {
    std::string host;
    std::int32_t port_base = 0;
    std::optional<sni_host_pattern> sni;

    std::string host_of(std::int32_t node_id) const { return sni ? sni->host_of(node_id) : host; }
    std::int32_t port_of(std::int32_t node_id) const {
        return sni ? port_base : port_base + node_id;
    }
};

/// Where the body starts in a response (bytes after the size prefix: the correlation id, then
/// with header v1 a tagged-field section); an error when the header is cut short.
result<std::size_t> response_body_offset(protocol::bytes_view response,
                                                   int header_version);

/// Whether a response of this API and version is rewritten (else forwarded untouched).
bool rewrites_response(std::int16_t api_key, std::int16_t version);

/// The rewrite of one upstream response body (the bytes after the response header, owned by
/// `owner`, which `out` may keep views into): true when the new body was appended to `out`,
/// false when the body goes out unchanged (`out` untouched); an error when it does not decode.
/// The brokers a Metadata or DescribeCluster response lists are appended to `seen` (the
/// topology learns from them). ApiVersions goes through rewrite_api_versions instead.
result<bool> rewrite_response_body(std::int16_t api_key, std::int16_t version,
                                             protocol::bytes_view body,
                                             std::shared_ptr<const void> owner,
                                             const node_addresses& to,
                                             std::vector<upstream_broker>* seen,
                                             protocol::writer& out);

/// The versions the proxy offers for an API: [min, max], or nullopt when it offers none.
struct version_range {
    std::int16_t min = 0;
    std::int16_t max = 0;
    bool operator==(const version_range&) const = default;
};

/// What the proxy advertises for `key` given what the upstream offers for it: the
/// intersection with what protocol/'s codec parses (Produce keeps min version 0: older
/// librdkafka compresses with v0-v2); nullopt for a key the codec does not know or an empty
/// intersection.
std::optional<version_range> intersect_versions(std::int16_t api_key, version_range upstream);

/// Every API version the proxy offers as its ApiVersions answer lists it, by key (-1 entries
/// for keys not offered); filled from an upstream ApiVersions response.
class offered_apis {
public:
    /// Before any ApiVersions answer is seen: what the codec parses.
    offered_apis();
    /// From an upstream ApiVersions answer's list.
    void set_from_upstream(const std::vector<std::pair<std::int16_t, version_range>>& upstream);
    /// A further narrowing of what is offered (the authorizer's: request_acls.h), applied now
    /// and to every later upstream list; it never removes ApiVersions.
    using narrowing = std::optional<version_range> (*)(std::int16_t api_key, version_range r);
    void narrow_with(narrowing narrow);
    /// Whether a request of this key and version may go upstream.
    bool offers(std::int16_t api_key, std::int16_t version) const;
    /// The versions offered for `api_key`, or nullopt.
    std::optional<version_range> range(std::int16_t api_key) const;

private:
    std::vector<std::optional<version_range>> by_key_;
    narrowing narrow_ = nullptr;
};

/// The ApiVersions rewrite: the upstream's list intersected with the codec's, appended to
/// `out` (always rewritten); a successful answer also sets what the connection `offered`.
result<bool> rewrite_api_versions(std::int16_t version, protocol::bytes_view body,
                                            std::shared_ptr<const void> owner,
                                            offered_apis& offered, protocol::writer& out);

/// The whole answer frame (size prefix included) the proxy gives itself to a request it does
/// not forward (an API key it does not know, a version it does not offer, a too-new
/// ApiVersions): what a broker answers an unsupported version with (KIP-511): a v0 response
/// header, error UNSUPPORTED_VERSION and the API list at v0. The session stays open.
protocol::writer unsupported_version_answer(std::int32_t correlation_id,
                                            const offered_apis& offered);

/// The proxy's answer to a SaslHandshake v0 it cannot pass through (proxy.sasl.passthrough):
/// the whole v0 response frame, error UNSUPPORTED_VERSION and no mechanisms.
protocol::writer sasl_handshake_v0_refusal(std::int32_t correlation_id);

/// The proxy's own ApiVersions answer at `version` (a SASL listener's before the client's
/// login, when nothing may go upstream yet): the `offered` list; a version above the codec's
/// gets unsupported_version_answer.
protocol::writer api_versions_answer(std::int32_t correlation_id, std::int16_t version,
                                     const offered_apis& offered);

/// Whether a Produce request expects a response: false for acks=0. `body` follows the
/// request header. An undecodable prefix counts as expecting one.
bool produce_expects_response(std::int16_t version, protocol::bytes_view body);

}  // namespace sluice::gateway::proxy
