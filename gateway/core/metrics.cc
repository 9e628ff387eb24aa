#include "gateway/core/metrics.h"

#include <fmt/format.h>

namespace sluice::gateway {

void histogram::observe(std::chrono::nanoseconds d) {
    const double s = std::chrono::duration<double>(d).count();
    std::size_t i = 0;
    while (i < bounds.size() && s > bounds[i]) {
        ++i;
    }
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(static_cast<std::uint64_t>(d.count() > 0 ? d.count() : 0),
                      std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
}

void histogram::render(std::string& out, const std::string& name,
                       const std::string& labels) const {
    std::array<std::uint64_t, bounds.size() + 1> counts{};
    for (std::size_t i = 0; i < counts.size(); ++i) {
        counts[i] = buckets_[i].load(std::memory_order_relaxed);
    }
    render_histogram(out, name, labels, bounds, counts,
                     static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9,
                     count_.load(std::memory_order_relaxed));
}

void render_histogram(std::string& out, const std::string& name, const std::string& labels,
                      std::span<const double> bounds, std::span<const std::uint64_t> counts,
                      double sum_seconds, std::uint64_t count) {
    std::uint64_t cumulative = 0;
    const std::string sep = labels.empty() ? "" : ",";
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        cumulative += counts[i];
        out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, bounds[i],
                           cumulative);
    }
    cumulative += counts[bounds.size()];
    out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, cumulative);
    const std::string braces = labels.empty() ? "" : "{" + labels + "}";
    out += fmt::format("{}_sum{} {}\n", name, braces, sum_seconds);
    out += fmt::format("{}_count{} {}\n", name, braces, count);
}

std::string metrics_registry::escape(const std::string& v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\' || c == '"') {
            out.push_back('\\');
            out.push_back(c);
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out.push_back(c);
        }
    }
    return out;
}

std::string metrics_registry::format_labels(const labels& l) {
    std::string out;
    for (const auto& [k, v] : l) {
        if (!out.empty()) {
            out.push_back(',');
        }
        out += k;
        out += "=\"";
        out += escape(v);
        out.push_back('"');
    }
    return out;
}

metrics_registry::family& metrics_registry::family_for(const std::string& name,
                                                       const std::string& help,
                                                       const char* type) {
    auto& f = families_[name];
    if (f.type.empty()) {
        f.help = help;
        f.type = type;
    }
    return f;
}

counter& metrics_registry::get_counter(const std::string& name, const std::string& help,
                                       const labels& l) {
    std::lock_guard lock(mu_);
    auto& slot = family_for(name, help, "counter").counters[format_labels(l)];
    if (!slot) {
        slot = std::make_unique<counter>();
    }
    return *slot;
}

gauge& metrics_registry::get_gauge(const std::string& name, const std::string& help,
                                   const labels& l) {
    std::lock_guard lock(mu_);
    auto& slot = family_for(name, help, "gauge").gauges[format_labels(l)];
    if (!slot) {
        slot = std::make_unique<gauge>();
    }
    return *slot;
}

histogram& metrics_registry::get_histogram(const std::string& name, const std::string& help,
                                           const labels& l) {
    std::lock_guard lock(mu_);
    auto& slot = family_for(name, help, "histogram").histograms[format_labels(l)];
    if (!slot) {
        slot = std::make_unique<histogram>();
    }
    return *slot;
}

void metrics_registry::add_collector(std::function<void(std::string&)> collector) {
    std::lock_guard lock(mu_);
    collectors_.push_back(std::move(collector));
}

std::string metrics_registry::render() const {
    std::string out;
    std::vector<std::function<void(std::string&)>> collectors;
    {
        std::lock_guard lock(mu_);
        for (const auto& [name, f] : families_) {
            out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, f.help, name, f.type);
            for (const auto& [l, c] : f.counters) {
                out += l.empty() ? fmt::format("{} {}\n", name, c->value())
                                 : fmt::format("{}{{{}}} {}\n", name, l, c->value());
            }
            for (const auto& [l, g] : f.gauges) {
                out += l.empty() ? fmt::format("{} {}\n", name, g->value())
                                 : fmt::format("{}{{{}}} {}\n", name, l, g->value());
            }
            for (const auto& [l, h] : f.histograms) {
                h->render(out, name, l);
            }
        }
        collectors = collectors_;
    }
    for (const auto& c : collectors) {
        c(out);
    }
    return out;
}

}  // namespace sluice::gateway
