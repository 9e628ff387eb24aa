// The upstream brokers' log sizes (owned by gateway/proxy): DescribeLogDirs asked of each
// broker on a connection of the gateway's own (upstream_stream, the `upstream.*` TLS and SASL
// login of the proxy's connections), for the console and REST in upstream mode (librdkafka
// 2.0.2 has no admin call for it; gateway/server hands this to the upstream client level).
//
// Every broker is asked at once; each exchange (connect, ApiVersions, login, DescribeLogDirs)
// is bounded by the timeout given, and a broker that does not answer in time, refuses
// (CLUSTER_AUTHORIZATION_FAILED) or does not offer DescribeLogDirs is answered with the reason
// and no sizes. Concurrency: the call runs on a strand of its own and resumes on the caller's
// executor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "auth/tls/tls_client_context.h"
#include "gateway/proxy/response_rewrite.h"
#include "gateway/proxy/upstream_login.h"
#include "protocol/kafka/messages/describe_log_dirs.h"

namespace sluice::gateway::proxy {

/// One broker's answer: its replicas' sizes, or why there are none.
struct broker_log_sizes {
    struct replica {
        std::string topic;
        std::int32_t partition = 0;
        std::int64_t size_bytes = 0;  // summed over the broker's log dirs; moves not counted
    };
    std::int32_t node_id = -1;
    std::string error;  // empty: the broker answered
    std::vector<replica> replicas;
};

/// What one DescribeLogDirs response says (at `version`): the replicas by topic and
/// partition, a replica in several dirs summed, future replicas (a move between dirs) and
/// dirs with an error left out; `error` set when the whole answer is an error (v3+).
broker_log_sizes log_sizes_of(std::int32_t node_id,
                              const protocol::kafka::describe_log_dirs_response& resp,
                              std::int16_t version);

/// Asks each of `brokers` for its log dirs, in parallel; one answer per broker, in the
/// order given.
boost::asio::awaitable<std::vector<broker_log_sizes>> read_upstream_log_dirs(
    std::vector<upstream_broker> brokers, upstream_login login,
    std::shared_ptr<auth::tls_client_context> tls, std::chrono::milliseconds timeout);

}  // namespace sluice::gateway::proxy
