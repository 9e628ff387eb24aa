#include "gateway/core/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace sluice::gateway {
namespace {

/// The fields of /proc/self/stat after the command name (which may hold spaces), numbered as
/// proc(5) numbers them from field 3 (state) on.
std::vector<std::string> stat_fields() {
    std::ifstream in("/proc/self/stat");
    std::string line;
    std::getline(in, line);
    const auto close = line.rfind(')');
    std::vector<std::string> out;
    if (close == std::string::npos) {
        return out;
    }
    std::istringstream rest(line.substr(close + 1));
    std::string f;
    while (rest >> f) {
        out.push_back(f);
    }
    return out;
}

/// proc(5) field number n (1-based, as the manual counts) of /proc/self/stat.
double stat_field(const std::vector<std::string>& fields, std::size_t n) {
    const std::size_t i = n - 3;
    return i < fields.size() ? std::stod(fields[i]) : -1;
}

double boot_time_seconds() {
    std::ifstream in("/proc/stat");
    std::string key;
    while (in >> key) {
        if (key == "btime") {
            double v = 0;
            in >> v;
            return v;
        }
        in.ignore(1 << 16, '\n');
    }
    return -1;
}

void metric(std::string& out, const char* name, const char* type, const char* help, double v) {
    if (v < 0) {
        return;
    }
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help, type, v);
}

}  // namespace

void render_process_metrics(std::string& out) {
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    const auto f = stat_fields();
    if (!f.empty()) {
        metric(out, "sluice_process_cpu_seconds_total", "counter",
               "CPU time the process has used, user and system, in seconds.",
               (stat_field(f, 14) + stat_field(f, 15)) / ticks);
        metric(out, "sluice_process_resident_memory_bytes", "gauge",
               "Resident set size in bytes.", stat_field(f, 24) * page);
        metric(out, "sluice_process_virtual_memory_bytes", "gauge", "Virtual memory in bytes.",
               stat_field(f, 23));
        metric(out, "sluice_process_threads", "gauge", "Threads in the process.",
               stat_field(f, 20));
        const double boot = boot_time_seconds();
        if (boot >= 0) {
            metric(out, "sluice_process_start_time_seconds", "gauge",
                   "When the process started, in seconds since the Unix epoch.",
                   boot + stat_field(f, 22) / ticks);
        }
    }
    std::error_code ec;
    double fds = 0;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
         it.increment(ec)) {
        ++fds;
    }
    if (!ec) {
        metric(out, "sluice_process_open_fds", "gauge", "Open file descriptors.", fds);
    }
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
        metric(out, "sluice_process_max_fds", "gauge", "The limit on open file descriptors.",
               static_cast<double>(lim.rlim_cur));
    }
}

}  // namespace sluice::gateway
