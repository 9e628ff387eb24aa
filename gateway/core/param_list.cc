#include "gateway/core/param_list.h"

#include "protocol/core/hex.h"

namespace sluice::gateway {

std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '%') {
            const int byte = percent_escape_value(s.substr(i));
            if (byte < 0) {
                return std::nullopt;
            }
            out.push_back(static_cast<char>(byte));
            i += 2;
        } else if (c == '+' && plus_is_space) {
            out.push_back(' ');
        } else {
            out.push_back(c);
        }
    }
    return out;
}

void param_list::add(std::string name, std::string value) {
    items_.emplace_back(std::move(name), std::move(value));
}

std::optional<std::string_view> param_list::get(std::string_view name) const {
    for (const auto& [k, v] : items_) {
        if (k == name) {
            return std::string_view(v);
        }
    }
    return std::nullopt;
}

std::vector<std::string_view> param_list::all(std::string_view name) const {
    std::vector<std::string_view> out;
    for (const auto& [k, v] : items_) {
        if (k == name) {
            out.emplace_back(v);
        }
    }
    return out;
}

}  // namespace sluice::gateway
