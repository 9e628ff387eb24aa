// Fuzzes the HTTP front's two wire decoders as the front sets them up (Boost.Beast's, in
// gateway/httpcore/http_connection.cc and gateway/http/ws/ws_session.cc), with what sluice does next
// with their output:
//   0: the bytes as one or more pipelined HTTP/1.1 requests, parsed with a header and a body
//      limit: each parse completes, wants more bytes, or fails; a complete request's body never
//      exceeds the body limit;
//   1: the bytes as what a client sends after a WebSocket upgrade request to /ws: messages are
//      read until an error, none exceeds read_message_max, and every text message that is
//      valid UTF-8 (the session closes the connection on any other) goes through the JSON
//      reading of the session's ops (gateway/http/json.h), as a session does.
// The first byte picks the mode.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "gateway/http/json.h"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

namespace {

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

constexpr std::size_t header_limit = 8 * 1024;
constexpr std::size_t body_limit = 4 * 1024;
constexpr std::size_t message_limit = 4 * 1024;

void parse_requests(std::string_view bytes) {
    int requests = 0;
    while (!bytes.empty() && requests < 64) {
        http::request_parser<http::string_body> parser;
        parser.header_limit(header_limit);
        parser.body_limit(body_limit);
        parser.eager(true);
        beast::error_code ec;
        const std::size_t used = parser.put(asio::buffer(bytes.data(), bytes.size()), ec);
        check(used <= bytes.size());
        if (ec == http::error::need_more) {
            return;  // the connection would read on
        }
        if (ec) {
            return;  // the connection answers 400/413/431 and closes
        }
        if (!parser.is_done()) {
            return;
        }
        check(parser.get().body().size() <= body_limit);
        check(used > 0);
        bytes.remove_prefix(used);
        ++requests;
    }
}

constexpr std::string_view upgrade =
    "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

void read_messages(std::string_view bytes) {
    asio::io_context ioc;
    beast::test::stream client(ioc);
    websocket::stream<beast::test::stream> ws(ioc);
    ws.next_layer().connect(client);
    ws.read_message_max(message_limit);
    ws.auto_fragment(false);
    ws.next_layer().append(beast::string_view(upgrade.data(), upgrade.size()));
    ws.next_layer().append(beast::string_view(bytes.data(), bytes.size()));
    client.close();  // reads end at the end of the input
    beast::error_code ec;
    ws.accept(ec);
    check(!ec);
    for (int n = 0; n < 256; ++n) {
        beast::flat_buffer buf;
        ws.read(buf, ec);
        if (ec) {
            return;
        }
        check(buf.size() <= message_limit);
        if (ws.got_text()) {
            const std::string_view text(static_cast<const char*>(buf.data().data()),
                                        buf.size());
            if (!sluice::gateway::json::valid_utf8(text)) {
                // Beast 1.74 passes a message whose empty final frame follows a fragment that
                // ends inside a character; the session closes such a connection (1007).
                return;
            }
            sluice::gateway::json::document doc;
            (void)sluice::gateway::json::parse(text, doc);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 64 * 1024) {
        return 0;
    }
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    if (data[0] % 2 == 0) {
        parse_requests(input);
    } else {
        read_messages(input);
    }
    return 0;
}
