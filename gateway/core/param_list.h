// Named values in arrival order (owned by gateway/core): an HTTP route's captures or a
// request's query parameters, and what the cross-front ACL tables read them from; the
// percent-decoding both are made with.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::gateway {

/// Percent-decoding; with `plus_is_space` (query strings) '+' means ' '. Nullopt when a '%'
/// is not followed by two hex digits.
std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space = false);

/// Named values in arrival order: a route's captures or a request's query parameters.
class param_list {
public:
    void add(std::string name, std::string value);
    /// The first value named `name`.
    std::optional<std::string_view> get(std::string_view name) const;
    /// Every value named `name`, in order (a repeated query parameter).
    std::vector<std::string_view> all(std::string_view name) const;
    bool has(std::string_view name) const { return get(name).has_value(); }
    const std::vector<std::pair<std::string, std::string>>& items() const { return items_; }
    std::size_t size() const { return items_.size(); }
    bool empty() const { return items_.empty(); }

private:
    std::vector<std::pair<std::string, std::string>> items_;
};

}  // namespace sluice::gateway
