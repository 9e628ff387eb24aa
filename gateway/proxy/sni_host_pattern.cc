#include "gateway/proxy/sni_host_pattern.h"

#include <cstdint>
#include <limits>
#include <stdexcept>

namespace sluice::gateway::proxy {
namespace {

bool sni_host_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.';
}

char sni_lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool sni_equal_nocase(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (sni_lower(a[i]) != sni_lower(b[i])) {
            return false;
        }
    }
    return true;
}

}  // namespace

sni_host_pattern sni_host_pattern::parse(std::string_view pattern) {
    const auto at = pattern.find(placeholder);
    if (at == std::string_view::npos) {
        throw std::invalid_argument("'" + std::string(pattern) + "' has no " +
                                    std::string(placeholder) + " (where the node id goes)");
    }
    sni_host_pattern out;
    out.prefix_ = std::string(pattern.substr(0, at));
    out.suffix_ = std::string(pattern.substr(at + placeholder.size()));
    if (out.suffix_.find(placeholder) != std::string::npos) {
        throw std::invalid_argument("'" + std::string(pattern) + "' has " +
                                    std::string(placeholder) + " more than once");
    }
    for (const std::string* part : {&out.prefix_, &out.suffix_}) {
        for (const char c : *part) {
            if (!sni_host_char(c)) {
                throw std::invalid_argument("'" + std::string(pattern) + "' is not a host name "
                                            "around " + std::string(placeholder) +
                                            " (letters, digits, '-' and '.' only)");
            }
        }
    }
    if (out.prefix_.starts_with('.') || out.suffix_.ends_with('.') ||
        out.prefix_.find("..") != std::string::npos ||
        out.suffix_.find("..") != std::string::npos) {
        throw std::invalid_argument("'" + std::string(pattern) + "' has an empty label");
    }
    return out;
}

std::string sni_host_pattern::host_of(std::int32_t node_id) const {
    return prefix_ + std::to_string(node_id) + suffix_;
}

std::optional<std::int32_t> sni_host_pattern::route(std::string_view server_name,
                                                    std::string_view own_host) const {
    if (sni_equal_nocase(server_name, own_host)) {
        return std::nullopt;
    }
    return node_of(server_name);
}

std::optional<std::int32_t> sni_host_pattern::node_of(std::string_view server_name) const {
    if (server_name.size() <= prefix_.size() + suffix_.size()) {
        return std::nullopt;
    }
    if (!sni_equal_nocase(server_name.substr(0, prefix_.size()), prefix_) ||
        !sni_equal_nocase(server_name.substr(server_name.size() - suffix_.size()), suffix_)) {
        return std::nullopt;
    }
    const std::string_view digits = server_name.substr(
        prefix_.size(), server_name.size() - prefix_.size() - suffix_.size());
    // One name a node: no sign, no leading zero (host_of never writes them).
    if (digits.size() > 10 || (digits.size() > 1 && digits[0] == '0')) {
        return std::nullopt;
    }
    std::int64_t id = 0;
    for (const char c : digits) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        id = id * 10 + (c - '0');
    }
    if (id > std::numeric_limits<std::int32_t>::max()) {
        return std::nullopt;
    }
    return static_cast<std::int32_t>(id);
}

}  // namespace sluice::gateway::proxy
