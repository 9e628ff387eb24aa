#include "gateway/proxy/response_rewrite.h"

#include <algorithm>
#include <utility>

#include "protocol/kafka/api_table.h"
#include "protocol/kafka/header.h"
#include "protocol/kafka/messages/api_versions.h"
#include "protocol/kafka/messages/describe_cluster.h"
#include "protocol/kafka/messages/fetch.h"
#include "protocol/kafka/messages/find_coordinator.h"
#include "protocol/kafka/messages/metadata.h"
#include "protocol/kafka/messages/produce.h"
#include "protocol/kafka/messages/sasl_handshake.h"

namespace sluice::gateway::proxy {
namespace kafka = protocol::kafka;

namespace {

constexpr std::int16_t rw_produce_key = static_cast<std::int16_t>(kafka::api_key::produce);
constexpr std::int16_t rw_fetch_key = static_cast<std::int16_t>(kafka::api_key::fetch);
constexpr std::int16_t rw_metadata_key = static_cast<std::int16_t>(kafka::api_key::metadata);
constexpr std::int16_t rw_find_coordinator_key =
    static_cast<std::int16_t>(kafka::api_key::find_coordinator);
constexpr std::int16_t rw_describe_cluster_key =
    static_cast<std::int16_t>(kafka::api_key::describe_cluster);
constexpr std::int16_t rw_api_versions_key =
    static_cast<std::int16_t>(kafka::api_key::api_versions);
// KIP-951: the first versions whose responses carry NodeEndpoints.
constexpr std::int16_t rw_produce_first_node_endpoints = 10;
constexpr std::int16_t rw_fetch_first_node_endpoints = 16;

/// Decodes `body` as T at `version`. Bytes after the body are kept in `trailing`: Kafka's
/// clients ignore them (compat: librdkafka 2.12's mock cluster ends Metadata v9+ with one), so
/// they go out as they came.
template <typename T>
result<T> rw_decode_whole(protocol::bytes_view body, std::shared_ptr<const void> owner,
                          std::int16_t version, protocol::bytes_view& trailing) {
    protocol::reader r(body, std::move(owner));
    T msg;
    msg.decode(r, version);
    if (!r.ok()) {
        return std::unexpected(r.error());
    }
    trailing = r.rest();
    return msg;
}

template <typename T>
bool rw_encode_body(const T& msg, std::int16_t version, protocol::writer& out,
                    protocol::bytes_view trailing) {
    msg.encode(out, version);
    out.raw(trailing);
    return true;
}

/// A node's address as the gateway serves it; a negative id (no such node: a coordinator
/// not available) keeps the upstream's placeholder.
template <typename Host, typename Port>
void rw_point_at_gateway(std::int32_t node_id, Host& host, Port& port, const node_addresses& to) {
    if (node_id < 0) {
        return;
    }
    host = to.host_of(node_id);
    port = to.port_of(node_id);
}

using rw_rewrite_result = result<bool>;

rw_rewrite_result rw_rewrite_metadata(std::int16_t version, protocol::bytes_view body,
                                std::shared_ptr<const void> owner, const node_addresses& to,
                                std::vector<upstream_broker>* seen, protocol::writer& out) {
    protocol::bytes_view trailing;
    auto msg = rw_decode_whole<kafka::metadata_response>(body, std::move(owner), version, trailing);
    if (!msg) {
        return std::unexpected(msg.error());
    }
    for (auto& b : msg->brokers) {
        if (seen != nullptr) {
            seen->push_back({b.node_id.value, b.host, b.port, b.rack});
        }
        rw_point_at_gateway(b.node_id.value, b.host, b.port, to);
    }
    return rw_encode_body(*msg, version, out, trailing);
}

rw_rewrite_result rw_rewrite_find_coordinator(std::int16_t version, protocol::bytes_view body,
                                        std::shared_ptr<const void> owner,
                                        const node_addresses& to, protocol::writer& out) {
    protocol::bytes_view trailing;
    auto msg = rw_decode_whole<kafka::find_coordinator_response>(body, std::move(owner), version,
                                                                 trailing);
    if (!msg) {
        return std::unexpected(msg.error());
    }
    // v0-v3 name one coordinator at the top, v4+ (KIP-699) a list.
    rw_point_at_gateway(msg->node_id.value, msg->host, msg->port, to);
    for (auto& c : msg->coordinators) {
        rw_point_at_gateway(c.node_id.value, c.host, c.port, to);
    }
    return rw_encode_body(*msg, version, out, trailing);
}

rw_rewrite_result rw_rewrite_describe_cluster(std::int16_t version, protocol::bytes_view body,
                                        std::shared_ptr<const void> owner,
                                        const node_addresses& to,
                                        std::vector<upstream_broker>* seen,
                                        protocol::writer& out) {
    protocol::bytes_view trailing;
    auto msg = rw_decode_whole<kafka::describe_cluster_response>(body, std::move(owner), version,
                                                                 trailing);
    if (!msg) {
        return std::unexpected(msg.error());
    }
    // compat: endpoint_type 2 (KIP-919, controllers) lists controllers, not brokers: their
    // addresses are rewritten too (no client may reach the upstream), but not learned.
    for (auto& b : msg->brokers) {
        if (seen != nullptr && msg->endpoint_type == 1) {
            seen->push_back({b.broker_id.value, b.host, b.port, b.rack});
        }
        rw_point_at_gateway(b.broker_id.value, b.host, b.port, to);
    }
    return rw_encode_body(*msg, version, out, trailing);
}

/// The highest ApiVersions version an upstream's error answer names: read as a v0 list, else
/// as a flexible one; 0 (every broker's) when neither reads.
std::int16_t rw_api_versions_max_in_error(protocol::bytes_view body) {
    for (const bool flex : {false, true}) {
        protocol::reader r(body.subspan(2));
        const std::int64_t n = r.array_length(flex, 6);
        for (std::int64_t i = 0; i < n && r.ok(); ++i) {
            const std::int16_t key = r.i16();
            (void)r.i16();
            const std::int16_t max = r.i16();
            if (flex) {
                const std::uint32_t tags = r.uvarint();
                for (std::uint32_t t = 0; t < tags && r.ok(); ++t) {
                    (void)r.uvarint();
                    r.skip(r.uvarint());
                }
            }
            if (r.ok() && key == rw_api_versions_key && max >= 0) {
                return max;
            }
        }
    }
    return 0;
}

/// Produce v10+ and Fetch v16+: only a response that carries NodeEndpoints (a leader moved)
/// is re-encoded; the records are spliced from the upstream frame, never copied.
template <typename T>
rw_rewrite_result rw_rewrite_node_endpoints(std::int16_t version, protocol::bytes_view body,
                                      std::shared_ptr<const void> owner,
                                      const node_addresses& to, protocol::writer& out) {
    protocol::bytes_view trailing;
    auto msg = rw_decode_whole<T>(body, std::move(owner), version, trailing);
    if (!msg) {
        return std::unexpected(msg.error());
    }
    if (msg->node_endpoints.empty()) {
        return false;
    }
    for (auto& e : msg->node_endpoints) {
        rw_point_at_gateway(e.node_id.value, e.host, e.port, to);
    }
    return rw_encode_body(*msg, version, out, trailing);
}

/// The frame (size prefix included) of an answer the proxy makes itself, of an API whose
/// responses keep header v0 at every version (ApiVersions, SaslHandshake).
template <typename Response>
protocol::writer answer_frame(std::int32_t correlation_id, const Response& resp,
                              std::int16_t version) {
    protocol::writer w;
    const std::size_t size_at = w.reserve_i32();
    kafka::encode_response_header(w, correlation_id, 0);
    resp.encode(w, version);
    w.patch_i32(size_at, static_cast<std::int32_t>(w.size() - 4));
    return w;
}

}  // namespace

result<std::size_t> response_body_offset(protocol::bytes_view response,
                                                   int header_version) {
    protocol::reader r(response);
    (void)r.i32();  // correlation id
    if (header_version >= 1) {
        const std::uint32_t tags = kafka::codec::read_tag_count(r);
        for (std::uint32_t i = 0; i < tags && r.ok(); ++i) {
            (void)r.uvarint();  // tag
            r.skip(r.uvarint());
        }
    }
    if (!r.ok()) {
        return std::unexpected(r.error());
    }
    return r.position();
}

bool rewrites_response(std::int16_t api_key, std::int16_t version) {
    switch (api_key) {
        case rw_metadata_key:
        case rw_find_coordinator_key:
        case rw_describe_cluster_key:
        case rw_api_versions_key:
            return true;
        case rw_produce_key:
            return version >= rw_produce_first_node_endpoints;
        case rw_fetch_key:
            return version >= rw_fetch_first_node_endpoints;
        default:
            return false;
    }
}

rw_rewrite_result rewrite_response_body(std::int16_t api_key, std::int16_t version,
                                     protocol::bytes_view body,
                                     std::shared_ptr<const void> owner,
                                     const node_addresses& to,
                                     std::vector<upstream_broker>* seen, protocol::writer& out) {
    if (!rewrites_response(api_key, version)) {
        return false;
    }
    switch (api_key) {
        case rw_metadata_key:
            return rw_rewrite_metadata(version, body, std::move(owner), to, seen, out);
        case rw_find_coordinator_key:
            return rw_rewrite_find_coordinator(version, body, std::move(owner), to, out);
        case rw_describe_cluster_key:
            return rw_rewrite_describe_cluster(version, body, std::move(owner), to, seen, out);
        case rw_produce_key:
            return rw_rewrite_node_endpoints<kafka::produce_response>(version, body,
                                                                   std::move(owner), to, out);
        case rw_fetch_key:
            return rw_rewrite_node_endpoints<kafka::fetch_response>(version, body,
                                                                 std::move(owner), to, out);
        default:
            // ApiVersions has its own entry point (rewrite_api_versions): it changes what the
            // connection offers.
            return false;
    }
}

std::optional<version_range> intersect_versions(std::int16_t api_key, version_range upstream) {
    const kafka::api_info* info = kafka::find_api(api_key);
    if (info == nullptr) {
        return std::nullopt;
    }
    version_range out{std::max(info->min_version, upstream.min),
                      std::min(info->max_version, upstream.max)};
    if (api_key == rw_produce_key) {
        // compat: librdkafka before 2.x picks Produce v0-v2 for compressed batches when the
        // broker's range starts there; Kafka 4 brokers still take them (KIP-896 kept Produce's
        // old versions readable). The proxy forwards them as they are.
        out.min = info->min_version;
    }
    if (out.min > out.max) {
        return std::nullopt;
    }
    return out;
}

offered_apis::offered_apis() {
    for (const auto& a : kafka::all_apis()) {
        const auto key = static_cast<std::int16_t>(a.key);
        if (static_cast<std::size_t>(key) >= by_key_.size()) {
            by_key_.resize(static_cast<std::size_t>(key) + 1);
        }
        by_key_[static_cast<std::size_t>(key)] = version_range{a.min_version, a.max_version};
    }
}

void offered_apis::set_from_upstream(
    const std::vector<std::pair<std::int16_t, version_range>>& upstream) {
    std::vector<std::optional<version_range>> next(by_key_.size());
    for (const auto& [key, range] : upstream) {
        if (key < 0 || static_cast<std::size_t>(key) >= next.size()) {
            continue;
        }
        next[static_cast<std::size_t>(key)] = intersect_versions(key, range);
        if (narrow_ != nullptr && next[static_cast<std::size_t>(key)]) {
            next[static_cast<std::size_t>(key)] =
                narrow_(key, *next[static_cast<std::size_t>(key)]);
        }
    }
    // ApiVersions itself stays answerable whatever the upstream said.
    if (!next[static_cast<std::size_t>(rw_api_versions_key)]) {
        next[static_cast<std::size_t>(rw_api_versions_key)] =
            by_key_[static_cast<std::size_t>(rw_api_versions_key)];
    }
    by_key_ = std::move(next);
}

void offered_apis::narrow_with(narrowing narrow) {
    narrow_ = narrow;
    for (std::size_t key = 0; key < by_key_.size(); ++key) {
        if (by_key_[key] && key != static_cast<std::size_t>(rw_api_versions_key)) {
            by_key_[key] = narrow(static_cast<std::int16_t>(key), *by_key_[key]);
        }
    }
}

std::optional<version_range> offered_apis::range(std::int16_t api_key) const {
    if (api_key < 0 || static_cast<std::size_t>(api_key) >= by_key_.size()) {
        return std::nullopt;
    }
    return by_key_[static_cast<std::size_t>(api_key)];
}

bool offered_apis::offers(std::int16_t api_key, std::int16_t version) const {
    const auto r = range(api_key);
    return r && version >= r->min && version <= r->max;
}

rw_rewrite_result rewrite_api_versions(std::int16_t version, protocol::bytes_view body,
                                       std::shared_ptr<const void> owner, offered_apis& offered,
                                       protocol::writer& out) {
    if (body.size() < 2) {
        return std::unexpected(make_error_code(protocol::errc::truncated));
    }
    if (protocol::load_i16(body.data()) != 0) {
        // KIP-511: a broker answers a version it does not support with an error and, where it
        // can, the ApiVersions versions it does support, so that the client retries lower.
        // Brokers differ in how they lay that body out (librdkafka's mock cluster writes a
        // flexible array into a v0 body), so only its ApiVersions range is looked for; the
        // answer is the proxy's own, at v0.
        kafka::api_versions_response own;
        own.error_code = static_cast<kafka::error_code>(protocol::load_i16(body.data()));
        const auto* ours = kafka::find_api(kafka::api_key::api_versions);
        std::int16_t upstream_max = rw_api_versions_max_in_error(body);
        own.api_keys.push_back({kafka::api_key::api_versions, ours->min_version,
                                std::min(ours->max_version, upstream_max), {}});
        own.encode(out, 0);
        return true;
    }
    protocol::bytes_view trailing;
    auto msg =
        rw_decode_whole<kafka::api_versions_response>(body, std::move(owner), version, trailing);
    if (!msg) {
        return std::unexpected(msg.error());
    }
    std::vector<std::pair<std::int16_t, version_range>> upstream;
    for (const auto& a : msg->api_keys) {
        upstream.emplace_back(static_cast<std::int16_t>(a.api_key),
                              version_range{a.min_version, a.max_version});
    }
    offered.set_from_upstream(upstream);
    std::vector<kafka::api_versions_response::api_version> kept;
    for (const auto& a : msg->api_keys) {
        if (auto r = offered.range(static_cast<std::int16_t>(a.api_key))) {
            kept.push_back({a.api_key, r->min, r->max, a.unknown_tagged_fields});
        }
    }
    msg->api_keys = std::move(kept);
    return rw_encode_body(*msg, version, out, trailing);
}

protocol::writer unsupported_version_answer(std::int32_t correlation_id,
                                            const offered_apis& offered) {
    kafka::api_versions_response resp;
    resp.error_code = kafka::error_code::unsupported_version;
    for (const auto& a : kafka::all_apis()) {
        if (const auto r = offered.range(static_cast<std::int16_t>(a.key))) {
            resp.api_keys.push_back({a.key, r->min, r->max, {}});
        }
    }
    return answer_frame(correlation_id, resp, 0);
}

protocol::writer sasl_handshake_v0_refusal(std::int32_t correlation_id) {
    kafka::sasl_handshake_response resp;
    resp.error_code = kafka::error_code::unsupported_version;
    return answer_frame(correlation_id, resp, 0);
}

protocol::writer api_versions_answer(std::int32_t correlation_id, std::int16_t version,
                                     const offered_apis& offered) {
    if (version < 0 || version > kafka::api_versions_response::max_version) {
        return unsupported_version_answer(correlation_id, offered);
    }
    kafka::api_versions_response resp;
    resp.error_code = kafka::error_code::none;
    for (const auto& a : kafka::all_apis()) {
        if (const auto r = offered.range(static_cast<std::int16_t>(a.key))) {
            resp.api_keys.push_back({a.key, r->min, r->max, {}});
        }
    }
    return answer_frame(correlation_id, resp, version);
}

bool produce_expects_response(std::int16_t version, protocol::bytes_view body) {
    protocol::reader r(body);
    const bool flex = kafka::produce_request::is_flexible(version);
    if (version >= 3) {
        (void)r.nullable_string(flex);  // transactional_id
    }
    const std::int16_t acks = r.i16();
    return !r.ok() || acks != 0;
}

}  // namespace sluice::gateway::proxy
