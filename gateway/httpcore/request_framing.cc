#include "gateway/httpcore/request_framing.h"

#include <algorithm>
#include <vector>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

namespace sluice::gateway {
namespace http = boost::beast::http;

namespace {

bool is_ows(char c) { return c == ' ' || c == '\t'; }

/// The transfer codings of every Transfer-Encoding field, in order (empty list elements,
/// which RFC 9110 section 5.6.1 lets a recipient ignore, left out).
std::vector<std::string_view> transfer_codings(const http_request& header) {
    std::vector<std::string_view> out;
    const auto [first, last] = header.equal_range(http::field::transfer_encoding);
    for (auto it = first; it != last; ++it) {
        std::string_view value(it->value().data(), it->value().size());
        std::size_t start = 0;
        while (start <= value.size()) {
            auto end = value.find(',', start);
            if (end == std::string_view::npos) {
                end = value.size();
            }
            const auto coding = trim_ows(value.substr(start, end - start));
            if (!coding.empty()) {
                out.push_back(coding);
            }
            start = end + 1;
        }
    }
    return out;
}

bool is_chunked(std::string_view coding) {
    return boost::beast::iequals(boost::beast::string_view(coding.data(), coding.size()),
                                 "chunked");
}

/// The registered codings sluice recognises but does not decode (RFC 9110 section 8.4.1).
bool is_compression(std::string_view coding) {
    for (const char* known : {"gzip", "x-gzip", "deflate", "compress", "x-compress"}) {
        if (boost::beast::iequals(boost::beast::string_view(coding.data(), coding.size()),
                                  known)) {
            return true;
        }
    }
    return false;
}

/// A printable excerpt of a client-sent value for an error message.
std::string excerpt(std::string_view s) {
    std::string out;
    for (unsigned char c : s.substr(0, 40)) {
        out.push_back(c < 0x20 || c >= 0x7f || c == '"' || c == '\\' ? '?' : static_cast<char>(c));
    }
    if (s.size() > 40) {
        out += "...";
    }
    return out;
}

}  // namespace

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && is_ows(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && is_ows(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

std::optional<std::size_t> find_header_end(std::string_view bytes, std::size_t from) {
    const auto at = bytes.find("\r\n\r\n", from);
    if (at == std::string_view::npos) {
        return std::nullopt;
    }
    return at + 4;
}

std::optional<framing_error> check_header_bytes(std::string_view header) {
    bool past_request_line = false;
    for (std::size_t i = 0; i < header.size(); ++i) {
        if (header[i] != '\n') {
            continue;
        }
        if (i == 0 || header[i - 1] != '\r') {
            return framing_error{400, "a header line ends with a bare LF (CRLF is required)"};
        }
        if (!past_request_line) {
            if (i == 1) {
                continue;  // an empty line before the request line is allowed (RFC 9112 2.2)
            }
            past_request_line = true;
        }
        if (i + 1 < header.size() && is_ows(header[i + 1])) {
            return framing_error{400, "obsolete line folding in the header is not accepted"};
        }
    }
    return std::nullopt;
}

std::optional<framing_error> check_framing(const http_request& header) {
    const auto lengths = header.count(http::field::content_length);
    if (lengths > 1) {
        return framing_error{400, "more than one Content-Length field"};
    }
    if (lengths == 1) {
        const auto v = header[http::field::content_length];
        const std::string_view value(v.data(), v.size());
        if (value.empty() || !std::all_of(value.begin(), value.end(),
                                          [](char c) { return c >= '0' && c <= '9'; })) {
            return framing_error{400, "Content-Length must be one decimal number, not \"" +
                                          excerpt(value) + "\""};
        }
    }
    if (header.count(http::field::transfer_encoding) == 0) {
        return std::nullopt;
    }
    const auto codings = transfer_codings(header);
    if (lengths > 0) {
        return framing_error{400, "a request may not have both Transfer-Encoding and "
                                  "Content-Length"};
    }
    if (header.version() < 11) {
        return framing_error{400, "Transfer-Encoding is not allowed in an HTTP/1.0 request"};
    }
    if (codings.empty() || !is_chunked(codings.back())) {
        return framing_error{400, "the final transfer coding must be chunked (Transfer-Encoding: " +
                                      (codings.empty() ? std::string()
                                                       : excerpt(codings.back())) +
                                      ")"};
    }
    if (std::count_if(codings.begin(), codings.end(), is_chunked) > 1) {
        return framing_error{400, "chunked is applied more than once"};
    }
    for (std::size_t i = 0; i + 1 < codings.size(); ++i) {
        if (!is_compression(codings[i])) {
            return framing_error{400, "unknown transfer coding \"" + excerpt(codings[i]) + "\""};
        }
    }
    if (codings.size() > 1) {
        return framing_error{501, "transfer coding \"" + excerpt(codings.front()) +
                                      "\" is not supported (only chunked)"};
    }
    return std::nullopt;
}

}  // namespace sluice::gateway
