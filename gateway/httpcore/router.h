// The HTTP route table: method + path pattern -> coroutine handler. The HTTP server builds one
// at start-up (its own routes, the group views, later the REST Proxy, WebSocket and SSE
// routes), then every connection dispatches its requests through it.
//
// Patterns are '/'-separated segments:
//   literal      "topics"        matches that segment exactly (after percent-decoding)
//   capture      "{topic}"       matches any one non-empty segment; the value is decoded
//   rest         "{path...}"     last segment only: matches one or more remaining segments
//                                (an empty one too, as in a trailing '/'), kept raw, because
//                                decoding would merge "%2F" with the separators
// At each segment a literal is preferred over a capture and a capture over a rest, with
// backtracking: GET /topics/{topic} and GET /topics/_all both exist, and /topics/_all
// reaches the second.
//
// Answers the router gives itself: 404 for a path no pattern matches, 405 with an Allow
// header for a path that matches only with other methods, 400 for a malformed
// percent-escape. HEAD runs the GET handler and drops the body (Content-Length stays).
// Every error body is {"error_code":<status>,"message":"..."}.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

#include "gateway/core/param_list.h"
#include "gateway/httpcore/http_stream.h"

namespace sluice::gateway {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;
using http_response = boost::beast::http::response<boost::beast::http::string_body>;

/// A complete, buffered HTTP answer: status, content type, body.
struct http_answer {
    unsigned status = 200;
    std::string content_type = "application/json";
    std::string body;
};

/// The response for `answer` (HTTP/1.1; dispatch sets the request's version and length).
http_response make_response(http_answer answer);
/// {"error_code":<status>,"message":"<message>"}: the error body of every HTTP route.
std::string json_error(unsigned status, std::string_view message);
/// `s` as a JSON string literal, quotes included (control characters escaped).
std::string json_quote(std::string_view s);
http_response error_response(unsigned status, std::string_view message);


/// Parses "a=1&b=x%20y&flag" (names and values decoded, '+' as space, a name without '='
/// has the value ""). Nullopt on a malformed percent-escape.
std::optional<param_list> parse_query(std::string_view query);

/// How a connection tells a long-running handler (long poll, SSE, WebSocket) to finish: the
/// first step of shutdown. Created by the connection, shared with the handler through the
/// http_request_context. Not thread-safe: used only on the connection's executor.
class finish_signal {
public:
    bool requested() const { return requested_; }
    /// Runs `fn` when finishing is requested, at once if it already was. One callback at a
    /// time (a later one replaces it); the connection drops it when the handler completes.
    void on_request(std::function<void()> fn);
    void clear() { fn_ = nullptr; }
    /// Called by the connection.
    void request();

private:
    bool requested_ = false;
    std::function<void()> fn_;
};

/// The connection's transport, for a handler that takes the connection over (WebSocket
/// upgrade through websocket::stream<http_stream&>, an SSE stream writing chunks).
/// Owned by the connection; valid until the handler's awaitable completes. The connection
/// stops timing the stream while a handler runs: the handler sets its own deadlines.
struct connection_stream {
    http_stream& stream;
    /// Bytes the connection already read past the current request (a WebSocket client may
    /// send its first frame right behind the upgrade request).
    boost::beast::flat_buffer& buffer;
    /// Set by a handler before it writes to the stream: if it then throws, the connection
    /// does not write an error response into the middle of the handler's bytes.
    bool taken = false;
};

/// The body of a request whose route reads it as it arrives (the v3 streamed produce): the
/// connection hands the handler the request once its header is read. Owned by the connection;
/// valid until the handler's awaitable completes.
class body_reader {
public:
    virtual ~body_reader() = default;
    /// Appends the next bytes of the body to `out` (at most a read buffer's worth); false at
    /// the end of the body or when the body cannot be read (see failed()).
    virtual boost::asio::awaitable<bool> read_some(std::string& out) = 0;
    /// True when reading stopped on an error (the peer closed, a deadline, a malformed chunk).
    virtual bool failed() const = 0;
    /// Body bytes handed out so far (what a producer_byte_rate quota counts).
    std::uint64_t bytes_read() const { return bytes_read_; }

protected:
    void count_read(std::size_t n) { bytes_read_ += n; }

private:
    std::uint64_t bytes_read_ = 0;
};

/// What a handler sees. Taken by value: handlers are coroutines (STYLE.md section 5).
struct http_request_context {
    http_request req;
    /// The request path without the query, still percent-encoded.
    std::string path;
    /// The route's captures by name (decoded; a {name...} rest stays raw).
    param_list params;
    param_list query;
    boost::asio::ip::tcp::endpoint peer;
    /// The request came over TLS (an HTTPS listener): the server's own URLs say https://.
    bool tls = false;
    /// The connection's executor (one io thread); where the handler runs.
    boost::asio::any_io_executor executor;
    /// Set when the server asks the connection to finish; never null inside a handler.
    std::shared_ptr<finish_signal> finish;
    /// The transport, for handlers that take the connection over; null without a socket
    /// (unit tests).
    connection_stream* stream = nullptr;
    /// The Access-Control-Allow-Origin value for this request when CORS is on and its Origin
    /// is allowed (the connection adds it to buffered answers; streams add it themselves).
    std::string cors_origin;
    /// Routes added with a streamed body: the body, to read as it arrives (req.body() is then
    /// empty). Null for every other route.
    body_reader* body = nullptr;
    /// Who sent the request, as the router's guard (http.authentication) established it:
    /// "User:NAME", or else the connection's: the TLS client certificate's mapped subject
    /// (HTTPS with ssl.client.auth), "User:ANONYMOUS" without one.
    std::string principal = "User:ANONYMOUS";
    /// Set by the guard when the client quotas must see what the request used: the router
    /// calls it after the handler with the handler's answer (null when it took the stream),
    /// the io-thread time the handler ran (zero unless `meter_busy_time`) and the size of the
    /// request's buffered body (the guard runs before the body is read).
    std::function<void(const http_response*, std::chrono::nanoseconds, std::size_t body_bytes)>
        after;
    /// Run the handler on a metered_executor (gateway/core/busy_time.h): request_percentage.
    bool meter_busy_time = false;
};

/// A handler's result: the response to send, or stream_taken when the handler used
/// ctx.stream itself. After stream_taken the connection writes nothing more and closes.
struct stream_taken {};
using handler_result = std::variant<http_response, stream_taken>;
using route_handler = std::function<boost::asio::awaitable<handler_result>(http_request_context)>;
/// Runs before every matched route's handler (authentication): nullopt lets the request
/// through (the guard may set ctx->principal), a response refuses it. `pattern` is the
/// route's pattern ("/ws", "/topics/{topic}/events"). `ctx` outlives the awaitable. The guard
/// sees the request's header only: a connection runs it before reading the body, so that a
/// refused request's body is never read (ctx->req.body() is empty).
using route_guard = std::function<boost::asio::awaitable<std::optional<http_response>>(
    http_request_context* ctx, std::string pattern)>;

/// The route table. Lifecycle: routes are added before the server starts; afterwards it is
/// read-only and shared by every connection (thread-safe for reading). Handlers run on the
/// connection's executor; an exception from a handler propagates to the caller of dispatch.
class router {
public:
    router();
    ~router();
    router(const router&) = delete;
    router& operator=(const router&) = delete;

    /// Adds `method pattern`. Throws std::invalid_argument for a malformed pattern or one
    /// already registered for `method` (captures at the same places, whatever their names).
    /// With `streamed_body` the handler gets the request after its header and reads the body
    /// itself (http_request_context::body); it then writes its answer on ctx.stream.
    void add(boost::beast::http::verb method, std::string_view pattern, route_handler handler,
             bool streamed_body = false);

    /// Puts `handler` in place of the one `method pattern` has (same pattern text), and answers
    /// the one it replaced, so that the new handler can hand requests on to it (the console's
    /// GET / in front of the REST Proxy's); adds the route and answers nullopt when there was
    /// none. Throws as add() does for a malformed pattern.
    std::optional<route_handler> replace(boost::beast::http::verb method, std::string_view pattern,
                                         route_handler handler);

    /// Sets the guard every matched request passes before its handler (before start only).
    void set_guard(route_guard guard) { guard_ = std::move(guard); }

    /// True when `method path` (no query) reaches a route added with a streamed body.
    bool streams_body(boost::beast::http::verb method, std::string_view path) const;

    struct match {
        enum class outcome { found, not_found, method_not_allowed, bad_request };
        outcome result = outcome::not_found;
        /// found: the handler (owned by the router) and the route's pattern.
        const route_handler* handler = nullptr;
        bool streamed_body = false;
        std::string pattern;
        param_list params;
        /// method_not_allowed: the methods the path accepts, as for the Allow header.
        std::vector<boost::beast::http::verb> allowed;
    };
    /// Matches `path` (no query, still percent-encoded) for `method`.
    match find(boost::beast::http::verb method, std::string_view path) const;

    /// Answers ctx.req: runs the matching handler, or answers 404/405/400 itself. Fills
    /// ctx.path, ctx.params and ctx.query (and ctx.finish when null). A response comes back
    /// with the request's HTTP version and its Content-Length set (body emptied for HEAD).
    /// The same as admit() then serve().
    boost::asio::awaitable<handler_result> dispatch(http_request_context ctx) const;

    /// A request admit() let through: the route whose handler serve() runs.
    struct admitted {
        const route_handler* handler = nullptr;
    };
    /// The first half of dispatch, on the request's header alone (a connection calls it before
    /// reading the body): matches the route, parses the query and runs the guard. Either the
    /// answer (404, 405, 400, the guard's refusal), finished as dispatch finishes its answers,
    /// or the admitted route, with ctx filled (path, params, query, finish, the guard's
    /// principal) for serve().
    boost::asio::awaitable<std::variant<http_response, admitted>> admit(
        http_request_context& ctx) const;
    /// The second half: runs the admitted route's handler on ctx, whose body has been read.
    boost::asio::awaitable<handler_result> serve(http_request_context ctx, admitted route) const;

private:
    struct node;
    std::unique_ptr<node> root_;
    route_guard guard_;
};

/// "GET, HEAD, POST": the value of an Allow header.
std::string allow_header(const std::vector<boost::beast::http::verb>& methods);

}  // namespace sluice::gateway
