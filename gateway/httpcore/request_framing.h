// How an HTTP/1.1 request's body is framed, checked before anything reads it (owned by
// gateway/http, used by http_connection on every listener: the HTTP front and the SQS front).
// A request whose framing two parsers could read differently is refused, so that sluice and any
// proxy in front of it always agree on where one request ends and the next begins (request
// smuggling). The rules are RFC 9112's, taken strictly:
//   - Transfer-Encoding (all its fields together) must be exactly `chunked`: a final coding that
//     is not chunked (`xchunked`, `identity`, `chunked, identity`), chunked applied twice, or an
//     unknown coding is 400 (section 6.1); a registered compression coding sluice does not
//     decode before a final chunked (`gzip, chunked`) is 501;
//   - Transfer-Encoding together with Content-Length is 400 (section 6.1), and so is
//     Transfer-Encoding in an HTTP/1.0 request;
//   - Content-Length must appear once, as one decimal number: a repeated field or a list, even
//     of equal values, is 400 (section 6.3);
//   - obsolete line folding (a header line that starts with a space or a tab) and a line ended
//     by a bare LF are 400 (sections 5.2 and 2.2); whitespace between a field name and its colon
//     is refused by the parser itself (section 5.1).
// Each refusal closes the connection, since the rest of the stream cannot be framed.
// Stateless functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/httpcore/router.h"

namespace sluice::gateway {

/// Why a request's framing is refused: the status to answer and a message for the client.
struct framing_error {
    unsigned status = 400;
    std::string message;
};

/// Where the header of the request at the start of `bytes` ends: the offset just past its
/// empty line ("\r\n\r\n"), or nullopt when it is not complete yet. `from` is where the search
/// may start (the header cannot end before it; the caller passes what it had searched before).
std::optional<std::size_t> find_header_end(std::string_view bytes, std::size_t from = 0);

/// Checks the raw bytes of a header (request line to the empty line, or as much of it as has
/// arrived): obsolete line folding and bare LF line ends.
std::optional<framing_error> check_header_bytes(std::string_view header);

/// Checks the parsed header's Transfer-Encoding and Content-Length fields (see above).
std::optional<framing_error> check_framing(const http_request& header);

/// `s` without leading and trailing optional whitespace (spaces and tabs, RFC 9110 5.6.3).
std::string_view trim_ows(std::string_view s);

}  // namespace sluice::gateway
