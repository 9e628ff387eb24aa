// Prometheus metrics: counters, gauges and histograms, rendered in the text exposition format
// on GET /metrics. Hot paths hold references to their series (created once, never removed), so
// recording is one relaxed atomic add; only creation and rendering take the registry lock.
// Dynamic values (log end offsets, group lag) come from collectors called at render time.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace sluice::gateway {

class counter {
public:
    void inc(std::uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
    std::uint64_t value() const { return v_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> v_{0};
};

class gauge {
public:
    void set(std::int64_t v) { v_.store(v, std::memory_order_relaxed); }
    void add(std::int64_t n) { v_.fetch_add(n, std::memory_order_relaxed); }
    std::int64_t value() const { return v_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::int64_t> v_{0};
};

/// Latency histogram with fixed buckets from 50 us to 10 s (seconds, like Prometheus).
class histogram {
public:
    static constexpr std::array<double, 16> bounds = {0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                                      0.0025,  0.005,  0.01,    0.025,  0.05,
                                                      0.1,     0.25,   0.5,     1.0,    2.5,
                                                      10.0};
    void observe(std::chrono::nanoseconds d);
    void render(std::string& out, const std::string& name, const std::string& labels) const;

private:
    std::array<std::atomic<std::uint64_t>, bounds.size() + 1> buckets_{};
    std::atomic<std::uint64_t> sum_ns_{0};
    std::atomic<std::uint64_t> count_{0};
};

/// Renders one histogram series from per-bucket counts (`counts` has one more entry than
/// `bounds`: above the last bound): NAME_bucket{...,le=...} cumulative, NAME_sum, NAME_count.
void render_histogram(std::string& out, const std::string& name, const std::string& labels,
                      std::span<const double> bounds, std::span<const std::uint64_t> counts,
                      double sum_seconds, std::uint64_t count);

/// Label values as name="value" pairs, already in order.
using labels = std::vector<std::pair<std::string, std::string>>;

class metrics_registry {
public:
    counter& get_counter(const std::string& name, const std::string& help, const labels& l = {});
    gauge& get_gauge(const std::string& name, const std::string& help, const labels& l = {});
    histogram& get_histogram(const std::string& name, const std::string& help,
                             const labels& l = {});

    /// A collector appends complete exposition lines (with # HELP/# TYPE) at render time.
    void add_collector(std::function<void(std::string&)> collector);

    std::string render() const;

    /// Escapes a label value for the exposition format.
    static std::string escape(const std::string& v);
    static std::string format_labels(const labels& l);

private:
    struct family {
        std::string help;
        std::string type;
        std::map<std::string, std::unique_ptr<counter>> counters;
        std::map<std::string, std::unique_ptr<gauge>> gauges;
        std::map<std::string, std::unique_ptr<histogram>> histograms;
    };
    family& family_for(const std::string& name, const std::string& help, const char* type);

    mutable std::mutex mu_;
    std::map<std::string, family> families_;
    std::vector<std::function<void(std::string&)>> collectors_;
};

}  // namespace sluice::gateway
