#include "protocol/sqs/text.h"

namespace sluice::protocol::sqs {
namespace {

/// Decodes one UTF-8 code point at s[i] and advances i past it (by one byte when malformed or
/// overlong, which returns -1).
long next_code_point(std::string_view s, std::size_t& i) {
    const auto c0 = static_cast<unsigned char>(s[i]);
    if (c0 < 0x80) {
        ++i;
        return c0;
    }
    int n = 0;
    long cp = 0;
    if ((c0 & 0xe0) == 0xc0) {
        n = 1;
        cp = c0 & 0x1f;
    } else if ((c0 & 0xf0) == 0xe0) {
        n = 2;
        cp = c0 & 0x0f;
    } else if ((c0 & 0xf8) == 0xf0) {
        n = 3;
        cp = c0 & 0x07;
    } else {
        ++i;
        return -1;
    }
    if (s.size() - i <= static_cast<std::size_t>(n)) {
        ++i;
        return -1;
    }
    for (int k = 1; k <= n; ++k) {
        const auto c = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
        if ((c & 0xc0) != 0x80) {
            ++i;
            return -1;
        }
        cp = (cp << 6) | (c & 0x3f);
    }
    static constexpr long min_for_length[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min_for_length[n]) {
        ++i;
        return -1;
    }
    i += static_cast<std::size_t>(n) + 1;
    return cp;
}

bool allowed(long cp) {
    return cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff) ||
           (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
}

}  // namespace

bool allowed_text(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        // The common case: printable ASCII.
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x80) {
            ++i;
            continue;
        }
        if (!allowed(next_code_point(text, i))) {
            return false;
        }
    }
    return true;
}

std::string sanitize_text(std::string_view text) {
    if (allowed_text(text)) {
        return std::string(text);
    }
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t start = i;
        const long cp = next_code_point(text, i);
        if (allowed(cp)) {
            out.append(text.substr(start, i - start));
        } else {
            out += "\xef\xbf\xbd";
        }
    }
    return out;
}

}  // namespace sluice::protocol::sqs
