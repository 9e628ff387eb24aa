#include "gateway/server/upstream_metrics.h"

#include <fmt/format.h>

#include "gateway/core/metrics.h"

namespace sluice::gateway {
namespace {

using broker_stats = backend::api::client::broker_stats;
using handle_stats = backend::api::client::stats::handle;

/// {name="value",...}: format_labels writes the pairs without the braces.
std::string upstream_labels(const labels& l) {
    return "{" + metrics_registry::format_labels(l) + "}";
}

/// {handle="producer",broker="host:port/1",node_id="1"} plus `extra`.
std::string upstream_broker_labels(const handle_stats& h, const broker_stats& b,
                                   labels extra = {}) {
    labels l{{"handle", h.name}, {"broker", b.name}, {"node_id", std::to_string(b.node_id)}};
    l.insert(l.end(), extra.begin(), extra.end());
    return upstream_labels(l);
}

/// One family over every broker of every handle: # HELP, # TYPE, then `line` per broker.
template <typename Line>
void upstream_broker_family(const backend::api::client::stats& stats, std::string& out,
                            const char* name, const char* type, const char* help, Line line) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (const auto& h : stats.handles) {
        for (const auto& b : h.brokers) {
            line(h, b);
        }
    }
}

}  // namespace

void render_upstream_metrics(const backend::api::client::stats& stats, std::string& out) {
    if (stats.handles.empty() && stats.errors.empty()) {
        return;
    }
    upstream_broker_family(
        stats, out, "sluice_upstream_broker_up", "gauge",
        "Whether the upstream client's connection to the broker is up (librdkafka state UP)",
        [&](const handle_stats& h, const broker_stats& b) {
            out += fmt::format("sluice_upstream_broker_up{} {}\n", upstream_broker_labels(h, b),
                               b.state == "UP" ? 1 : 0);
        });
    upstream_broker_family(
        stats, out, "sluice_upstream_broker_rtt_seconds", "gauge",
        "Round-trip time of upstream requests to the broker (0.5: librdkafka's average, 0.99: "
        "its p99, over the last statistics interval)",
        [&](const handle_stats& h, const broker_stats& b) {
            out += fmt::format("sluice_upstream_broker_rtt_seconds{} {}\n",
                               upstream_broker_labels(h, b, {{"quantile", "0.5"}}),
                               static_cast<double>(b.rtt_avg_us) / 1e6);
            out += fmt::format("sluice_upstream_broker_rtt_seconds{} {}\n",
                               upstream_broker_labels(h, b, {{"quantile", "0.99"}}),
                               static_cast<double>(b.rtt_p99_us) / 1e6);
        });
    upstream_broker_family(
        stats, out, "sluice_upstream_broker_throttle_seconds", "gauge",
        "Average throttle time the broker asked the upstream client for (its quotas)",
        [&](const handle_stats& h, const broker_stats& b) {
            out += fmt::format("sluice_upstream_broker_throttle_seconds{} {}\n",
                               upstream_broker_labels(h, b),
                               static_cast<double>(b.throttle_avg_ms) / 1e3);
        });
    upstream_broker_family(
        stats, out, "sluice_upstream_requests_total", "counter",
        "Requests the upstream client sent to the broker",
        [&](const handle_stats& h, const broker_stats& b) {
            out += fmt::format("sluice_upstream_requests_total{} {}\n",
                               upstream_broker_labels(h, b), b.requests_sent);
        });
    upstream_broker_family(
        stats, out, "sluice_upstream_request_errors_total", "counter",
        "Upstream requests to the broker that failed (transmit, receive and timeout errors)",
        [&](const handle_stats& h, const broker_stats& b) {
            out += fmt::format("sluice_upstream_request_errors_total{} {}\n",
                               upstream_broker_labels(h, b), b.request_errors);
        });
    out += "# HELP sluice_upstream_queued_messages Records waiting in the upstream client to be "
           "sent or acknowledged\n# TYPE sluice_upstream_queued_messages gauge\n";
    for (const auto& h : stats.handles) {
        out += fmt::format("sluice_upstream_queued_messages{} {}\n",
                           upstream_labels({{"handle", h.name}}),
                           h.queued_messages);
    }
    out += "# HELP sluice_upstream_call_errors_total Calls to the upstream cluster that failed, "
           "by error\n# TYPE sluice_upstream_call_errors_total counter\n";
    for (const auto& [error, count] : stats.errors) {
        out += fmt::format("sluice_upstream_call_errors_total{} {}\n",
                           upstream_labels({{"error", error}}), count);
    }
}

}  // namespace sluice::gateway
