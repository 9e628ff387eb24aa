#include "auth/text_fields.h"

#include <fstream>

#include "protocol/core/hex.h"

namespace sluice::auth {
std::string encode_field(std::string_view s) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (unsigned char c : s) {
        if (c <= 0x20 || c == 0x7f || c == '%') {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 0xf]);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    return out;
}

std::optional<std::string> decode_field(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out.push_back(s[i]);
            continue;
        }
        const int byte = percent_escape_value(s.substr(i));
        if (byte < 0) {
            return std::nullopt;
        }
        out.push_back(static_cast<char>(byte));
        i += 2;
    }
    return out;
}

std::vector<std::string_view> split_spaces(std::string_view s) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t at = s.find(' ', start);
        if (at == std::string_view::npos) {
            parts.push_back(s.substr(start));
            return parts;
        }
        parts.push_back(s.substr(start, at - start));
        start = at + 1;
    }
}

bool read_record_file(const std::filesystem::path& file, std::string_view magic,
                      std::string_view what,
                      const std::function<void(std::string_view line)>& on_record) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        if (!std::filesystem::exists(file)) {
            return false;
        }
        throw std::runtime_error("cannot read " + file.string());
    }
    std::string line;
    int n = 0;
    bool seen_magic = false;
    while (std::getline(in, line)) {
        ++n;
        if (line.empty() || line[0] == '#') {
            continue;
        }
        try {
            if (seen_magic) {
                on_record(line);
            } else if (line != magic) {
                throw bad_record("not a sluice " + std::string(what) + " file (expected '" +
                                 std::string(magic) + "')");
            }
            seen_magic = true;
        } catch (const bad_record& e) {
            throw std::runtime_error(file.string() + ":" + std::to_string(n) + ": " + e.what());
        }
    }
    if (in.bad()) {
        throw std::runtime_error("cannot read " + file.string());
    }
    return true;
}

}  // namespace sluice::auth
