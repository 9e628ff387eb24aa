// The process's own figures on /metrics, read from /proc/self at render time: resident
// memory, virtual memory, CPU seconds (user and system), open file descriptors against their
// limit, threads, and the start time.
#pragma once

#include <string>

namespace sluice::gateway {

/// Appends the process metrics in the Prometheus text format (nothing for a figure /proc
/// does not give).
void render_process_metrics(std::string& out);

}  // namespace sluice::gateway
