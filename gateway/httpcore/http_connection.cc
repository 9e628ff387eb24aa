#include "gateway/httpcore/http_connection.h"

#include <algorithm>
#include <array>
#include <exception>
#include <optional>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>

#include "gateway/httpcore/body_budget.h"
#include "gateway/httpcore/logger.h"
#include "gateway/policy/tls_handshake.h"

namespace sluice::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

/// The most bytes buffered ahead of the parser: a complete header (max_header_bytes) plus one
/// read. Bodies are moved into the request as they are parsed, so this bounds the buffer.
constexpr std::size_t read_chunk_bytes = 16 * 1024;
/// After an error response: how long, and how much, the unread rest of the request is read
/// and dropped, so that closing does not reset the connection before the client has read
/// the answer.
constexpr auto linger_timeout = std::chrono::seconds(2);
constexpr std::size_t linger_max_bytes = 64 * 1024 * 1024;
/// The same for a request refused on its header (authentication, ACLs, no route): its body
/// was never wanted, so little of it is read before closing (a client that sends a body
/// without waiting for `100 Continue` may then see the connection reset).
constexpr std::size_t refused_linger_max_bytes = 256 * 1024;
/// A request refused on its header whose Content-Length is at most this has its body read and
/// dropped, so that the connection stays open for the next request (a browser's 401'd POST).
constexpr std::uint64_t refused_body_drop_max_bytes = 64 * 1024;
/// How long the TLS close_notify exchange at the end of an HTTPS connection may take.
constexpr auto tls_shutdown_timeout = std::chrono::seconds(2);

/// The connection ended from the client's side or by a deadline or a stop: nothing to answer.
bool is_end_of_connection(const boost::system::error_code& ec) {
    return ec == http::error::end_of_stream || ec == http::error::partial_message ||
           ec == asio::error::eof || ec == asio::error::connection_reset ||
           ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor ||
           ec == asio::error::broken_pipe || ec == beast::error::timeout;
}

/// The status for a request that did not parse.
unsigned status_for_parse_error(const boost::system::error_code& ec) {
    if (ec == http::error::body_limit) {
        return 413;
    }
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
        return 431;
    }
    return 400;
}

/// A request body's room in the body budget (null budget: no bound). `cap` is the most it
/// reserves: the body limit (a larger buffered body is refused 413 by the parser; a streamed
/// route bounds what it keeps itself).
struct body_room {
    body_budget* budget = nullptr;
    body_budget::reservation* reserved = nullptr;
    const void* owner = nullptr;
    std::int64_t cap = 0;

    /// Makes room for `needed` bytes of body (at most cap), growing by doubling so that a body
    /// arriving in small pieces grows its room a few times only. False: no room in time.
    asio::awaitable<bool> ensure(std::uint64_t needed) const {
        const auto want =
            static_cast<std::int64_t>(std::min<std::uint64_t>(needed, static_cast<std::uint64_t>(cap)));
        if (budget == nullptr || (*reserved && reserved->bytes() >= want)) {
            co_return true;
        }
        const std::int64_t held = *reserved ? reserved->bytes() : 0;
        co_return co_await budget->reserve(*reserved, std::min(cap, std::max(want, 2 * held)),
                                           owner);
    }
};

/// The body of a streamed-body route, read from the connection's parser as the handler asks.
class streamed_body final : public body_reader {
public:
    streamed_body(http_stream& stream, beast::flat_buffer& buffer,
                  http::request_parser<http::string_body>& parser, std::chrono::seconds timeout,
                  body_room room)
        : stream_(stream), buffer_(buffer), parser_(parser), timeout_(timeout), room_(room) {}

    asio::awaitable<bool> read_some(std::string& out) override {
        auto& body = parser_.get().body();
        if (!body.empty()) {
            out += body;  // parsed along with the header or by an earlier read
            count_read(body.size());
            body.clear();
            co_return true;
        }
        if (parser_.is_done() || failed_) {
            co_return false;
        }
        // Room for what this read may add: the bytes handed out so far are what the route
        // may still hold.
        if (!co_await room_.ensure(bytes_read() + buffer_.max_size())) {
            http_log().debug("streamed body: no room in http.request.body.budget.bytes in time");
            room_.budget->count_refusal();
            failed_ = true;
            co_return false;
        }
        boost::system::error_code ec;
        stream_.expires_after(timeout_);
        co_await http::async_read_some(stream_, buffer_, parser_,
                                       asio::redirect_error(asio::use_awaitable, ec));
        stream_.expires_never();
        if (ec) {
            failed_ = true;
            co_return false;
        }
        out += body;
        count_read(body.size());
        body.clear();
        co_return true;
    }

    bool failed() const override { return failed_; }

private:
    http_stream& stream_;
    beast::flat_buffer& buffer_;
    http::request_parser<http::string_body>& parser_;
    std::chrono::seconds timeout_;
    body_room room_;
    bool failed_ = false;
};

/// Reads a buffered body whole, its room growing as a chunked one arrives. `out_of_room`: the
/// budget had no room in time (the error is then operation_aborted).
asio::awaitable<boost::system::error_code> read_buffered_body(
    http_stream& stream, beast::flat_buffer& buffer,
    http::request_parser<http::string_body>& parser, body_room room, bool& out_of_room) {
    boost::system::error_code ec;
    if (room.budget == nullptr || parser.content_length()) {
        // Room for a Content-Length body was made before reading.
        co_await http::async_read(stream, buffer, parser,
                                  asio::redirect_error(asio::use_awaitable, ec));
        co_return ec;
    }
    while (!parser.is_done()) {
        if (!co_await room.ensure(parser.get().body().size() + buffer.max_size())) {
            out_of_room = true;
            co_return asio::error::operation_aborted;
        }
        co_await http::async_read_some(stream, buffer, parser,
                                       asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            co_return ec;
        }
    }
    co_return ec;
}

bool expects_continue(const http_request& req) {
    const auto it = req.find(http::field::expect);
    return it != req.end() && beast::iequals(it->value(), "100-continue");
}

}  // namespace

request_timing::request_timing(metrics_registry& metrics, const std::string& front)
    : front_(front) {
    static constexpr const char* classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
    for (std::size_t i = 0; i < by_class_.size(); ++i) {
        by_class_[i] = &metrics.get_histogram(
            "sluice_http_request_seconds",
            "Time from reading an HTTP request's header to having written its response, by "
            "front and status class",
            {{"front", front}, {"code", classes[i]}});
    }
}

void request_timing::observe(unsigned status, std::chrono::nanoseconds took) const {
    const unsigned c = status / 100;
    if (c >= 1 && c <= 5) {
        by_class_[c - 1]->observe(took);
    }
}

http_connection::http_connection(tcp::socket socket, std::uint64_t id, const router& routes,
                                 counter& requests, http_limits limits,
                                 connection_error_page errors, const cors_policy* cors,
                                 const request_timing* timing,
                                 std::shared_ptr<auth::tls_server_context> tls)
    : stream_(std::move(socket)),
      buffer_(limits.max_header_bytes + read_chunk_bytes),
      transport_{stream_, buffer_},
      id_(id),
      routes_(routes),
      requests_(requests),
      limits_(limits),
      errors_(std::move(errors)),
      cors_(cors),
      timing_(timing),
      finish_(std::make_shared<finish_signal>()),
      tls_(std::move(tls)) {
    boost::system::error_code ec;
    peer_ = stream_.socket().remote_endpoint(ec);
    stream_.socket().set_option(tcp::no_delay(true), ec);
}

void http_connection::stop(stop_mode mode) {
    asio::post(stream_.get_executor(), [self = shared_from_this(), mode] { self->on_stop(mode); });
}

void http_connection::on_stop(stop_mode mode) {
    finish_->request();
    if (limits_.bodies != nullptr) {
        limits_.bodies->cancel(this);  // a request waiting for room in the body budget
    }
    if (mode == stop_mode::cut) {
        close();
    } else if (phase_ == phase::idle) {
        stopped_idle_ = true;
        stream_.cancel();  // between requests: nothing is lost
    }
}

void http_connection::close() {
    phase_ = phase::closing;
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
}

asio::awaitable<void> http_connection::run() {
    auto self = shared_from_this();
    http_log().debug("conn {}: accepted from {}", id_, peer_.address().to_string());
    if (tls_) {
        const bool ready = co_await start_tls();
        if (!ready) {
            close();
            co_return;
        }
    }
    while (!finish_->requested() && phase_ != phase::closing) {
        boost::system::error_code ec;
        if (buffer_.size() == 0) {
            phase_ = phase::idle;
            stream_.expires_after(limits_.idle_timeout);
            const std::size_t n = co_await stream_.async_read_some(
                buffer_.prepare(read_chunk_bytes), asio::redirect_error(asio::use_awaitable, ec));
            if (ec) {
                break;  // the client closed, the idle deadline passed, or a stop
            }
            buffer_.commit(n);
        }

        phase_ = phase::reading;
        stream_.expires_after(limits_.request_timeout);
        std::optional<framing_error> refused;
        ec = co_await read_header_bytes(refused);
        http::request_parser<http::string_body> parser;
        parser.body_limit(limits_.max_body_bytes);
        parser.header_limit(limits_.max_header_bytes);
        if (!ec && !refused) {
            // Parsed from the buffer: the whole header is there.
            co_await http::async_read_header(stream_, buffer_, parser,
                                             asio::redirect_error(asio::use_awaitable, ec));
            if (!ec) {
                refused = check_framing(parser.get());
            }
        }
        if (refused) {
            // Where this request ends cannot be told for sure (RFC 9112 6.1, 6.3): answer once
            // and close, since whatever follows may be read differently by another parser.
            http_log().info("conn {} from {}: refused request framing ({}): {}", id_,
                            peer_.address().to_string(), refused->status, refused->message);
            co_await answer_error_and_close(refused->status, refused->message);
            co_return;
        }
        if (ec) {
            if (is_end_of_connection(ec) || phase_ == phase::closing) {
                http_log().debug("conn {}: ended while reading a request: {}", id_, ec.message());
                break;
            }
            // The request does not parse or breaks a limit: answer once and close, since the
            // rest of the stream can no longer be framed.
            const unsigned status = status_for_parse_error(ec);
            http_log().debug("conn {} from {}: bad request ({}): {}", id_,
                             peer_.address().to_string(), status, ec.message());
            co_await answer_error_and_close(status, ec.message());
            co_return;
        }

        requests_.inc();
        const auto started = std::chrono::steady_clock::now();
        const auto target = parser.get().target();
        const bool streamed = routes_.streams_body(parser.get().method(),
                                                   std::string_view(target.data(), target.size()));
        // The body's room in the budget: given back once the handler has answered. Declared
        // before the streamed body, which refers to it.
        body_budget::reservation reserved;
        const body_room room{limits_.bodies, &reserved, this,
                             static_cast<std::int64_t>(std::min<std::uint64_t>(
                                 limits_.max_body_bytes, std::uint64_t{1} << 62))};
        http_request_context ctx;
        std::optional<streamed_body> body;
        ctx.req = parser.get();  // the header: the body is read once the request is admitted
        if (streamed) {
            body.emplace(stream_, buffer_, parser, limits_.request_timeout, room);
            ctx.body = &*body;
        }
        const bool client_keeps_alive = ctx.req.keep_alive();
        const bool client_expects_continue = expects_continue(ctx.req);
        ctx.peer = peer_;
        ctx.tls = tls_ != nullptr;
        ctx.principal = principal_;
        ctx.executor = stream_.get_executor();
        ctx.finish = finish_;
        ctx.stream = &transport_;
        if (cors_ && cors_->enabled()) {
            const auto origin = ctx.req.find(http::field::origin);
            if (origin != ctx.req.end()) {
                ctx.cors_origin =
                    cors_->allow(std::string_view(origin->value().data(), origin->value().size()));
            }
        }
        const std::string cors_origin = ctx.cors_origin;

        phase_ = phase::handling;
        stream_.expires_never();  // a long poll or a stream sets its own deadlines
        handler_result result;
        std::exception_ptr failure;
        bool refused_on_header = false;
        try {
            std::variant<http_response, router::admitted> admission;
            if (!cors_origin.empty() && ctx.req.method() == http::verb::options &&
                ctx.req.find(http::field::access_control_request_method) != ctx.req.end()) {
                admission = cors_->preflight(ctx.req, cors_origin);  // a preflight reaches no route
            } else {
                admission = co_await routes_.admit(ctx);
            }
            if (auto* answer = std::get_if<http_response>(&admission)) {
                // Refused on its header (authentication, ACLs, no route...): the body, if any,
                // is never read, and the connection closes after the answer.
                refused_on_header = true;
                result = std::move(*answer);
            } else {
                if (!parser.is_done()) {
                    phase_ = phase::reading;
                    // A buffered body's Content-Length is taken at once; a chunked one, or a
                    // streamed route's, grows its room as it arrives.
                    const auto length = parser.content_length();
                    if (!co_await room.ensure(length && !streamed ? *length
                                                                  : buffer_.max_size())) {
                        co_await refuse_for_room();
                        co_return;
                    }
                    if (client_expects_continue) {
                        http::response<http::empty_body> go_on{http::status::continue_, 11};
                        stream_.expires_after(limits_.write_timeout);
                        co_await http::async_write(stream_, go_on,
                                                   asio::redirect_error(asio::use_awaitable, ec));
                    }
                    if (!ec && streamed) {
                        // Read piecewise; the handler bounds what it keeps.
                        parser.body_limit(boost::none);
                    } else if (!ec) {
                        bool out_of_room = false;
                        stream_.expires_after(limits_.request_timeout);
                        ec = co_await read_buffered_body(stream_, buffer_, parser, room,
                                                         out_of_room);
                        if (out_of_room) {
                            co_await refuse_for_room();
                            co_return;
                        }
                    }
                    stream_.expires_never();
                    if (ec) {
                        if (is_end_of_connection(ec) || phase_ == phase::closing) {
                            http_log().debug("conn {}: ended while reading a body: {}", id_,
                                             ec.message());
                            break;
                        }
                        const unsigned status = status_for_parse_error(ec);
                        http_log().debug("conn {} from {}: bad request body ({}): {}", id_,
                                         peer_.address().to_string(), status, ec.message());
                        co_await answer_error_and_close(status, ec.message());
                        co_return;
                    }
                    phase_ = phase::handling;
                }
                if (!streamed) {
                    ctx.req.body() = std::move(parser.get().body());
                }
                result = co_await routes_.serve(std::move(ctx),
                                                std::get<router::admitted>(admission));
            }
        } catch (...) {
            failure = std::current_exception();
        }
        finish_->clear();
        if (failure) {
            if (!transport_.taken && phase_ != phase::closing) {
                co_await answer_error_and_close(500, "internal error");
            }
            std::rethrow_exception(failure);  // logged and counted by the listener
        }
        if (std::holds_alternative<stream_taken>(result) || transport_.taken) {
            break;
        }
        reserved.reset();  // the handler is done with the body

        auto& res = std::get<http_response>(result);
        res.set(http::field::server, "sluice");
        if (!cors_origin.empty()) {
            res.set(http::field::access_control_allow_origin, cors_origin);
            if (cors_origin != "*") {
                res.set(http::field::vary, "Origin");
            }
        }
        // A request answered without its whole body read (refused on its header, or a
        // streamed-body route that answered early) leaves bytes that are not the next request,
        // unless they are few: those are dropped after the answer, and the connection goes on
        // (not after `Expect: 100-continue`, whose client sends no body after a final answer).
        const bool body_read = parser.is_done();
        const auto length = parser.content_length();
        const bool drop = !body_read && refused_on_header && length &&
                          *length <= refused_body_drop_max_bytes && !client_expects_continue;
        const bool again = client_keeps_alive && !finish_->requested() && (body_read || drop);
        res.keep_alive(again);
        phase_ = phase::writing;
        stream_.expires_after(limits_.write_timeout);
        co_await http::async_write(stream_, res, asio::redirect_error(asio::use_awaitable, ec));
        if (timing_ != nullptr && !ec) {
            timing_->observe(res.result_int(), std::chrono::steady_clock::now() - started);
        }
        if (!ec && again && drop && !co_await drop_small_body(*length)) {
            break;
        }
        if (!ec && !body_read && !again) {
            // So that closing does not reset the answer away.
            co_await linger(refused_on_header ? refused_linger_max_bytes : linger_max_bytes);
        }
        if (ec || !again) {
            break;
        }
    }
    co_await finish();
}

asio::awaitable<boost::system::error_code> http_connection::read_header_bytes(
    std::optional<framing_error>& refused) {
    std::size_t searched = 0;
    for (;;) {
        const std::string_view bytes(static_cast<const char*>(buffer_.data().data()),
                                     buffer_.size());
        const auto end = find_header_end(bytes, searched);
        refused = check_header_bytes(bytes.substr(0, end ? *end : bytes.size()));
        if (refused || end) {
            co_return boost::system::error_code();
        }
        if (bytes.size() >= limits_.max_header_bytes || bytes.size() >= buffer_.max_size()) {
            co_return http::error::header_limit;  // answered 431
        }
        searched = bytes.size() >= 3 ? bytes.size() - 3 : 0;
        boost::system::error_code ec;
        const std::size_t n = co_await stream_.async_read_some(
            buffer_.prepare(std::min(read_chunk_bytes, buffer_.max_size() - buffer_.size())),
            asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            co_return ec;
        }
        buffer_.commit(n);
    }
}

asio::awaitable<bool> http_connection::drop_small_body(std::uint64_t length) {
    phase_ = phase::reading;
    std::size_t left = static_cast<std::size_t>(length);
    const std::size_t buffered = std::min(left, buffer_.size());
    buffer_.consume(buffered);
    left -= buffered;
    std::array<char, 16 * 1024> scratch;
    stream_.expires_after(limits_.request_timeout);
    while (left > 0) {
        boost::system::error_code ec;
        const std::size_t n = co_await stream_.async_read_some(
            asio::buffer(scratch.data(), std::min(left, scratch.size())),
            asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            co_return false;
        }
        left -= n;
    }
    stream_.expires_never();
    co_return true;
}

asio::awaitable<void> http_connection::refuse_for_room() {
    if (phase_ == phase::closing) {
        co_return;
    }
    if (limits_.bodies != nullptr) {
        limits_.bodies->count_refusal();
    }
    http_log().warn("conn {} from {}: no room for the request body in "
                    "http.request.body.budget.bytes within {} ms: 503",
                    id_, peer_.address().to_string(),
                    limits_.bodies != nullptr ? limits_.bodies->max_wait().count() : 0);
    co_await answer_error_and_close(503, "the server is holding as many request bodies as it "
                                         "may (http.request.body.budget.bytes); retry later");
}

asio::awaitable<bool> http_connection::start_tls() {
    const std::string who = fmt::format("conn {} from {}", id_, peer_.address().to_string());
    stream_.start_tls(tls_->ssl);
    const audit_source source{"User:ANONYMOUS", audit_client_of(peer_),
                              timing_ != nullptr ? timing_->front() : "http"};
    const bool done = co_await bounded_tls_handshake(*stream_.tls(), stream_.socket(),
                                                     shared_from_this(), http_log(), who, source);
    if (!done) {
        co_return false;
    }
    auto principal = tls_client_principal(*tls_, stream_.tls()->native_handle(), who, source);
    if (!principal) {
        co_return false;
    }
    principal_ = std::move(*principal);
    co_return true;
}

asio::awaitable<void> http_connection::finish() {
    if (stream_.tls() != nullptr && phase_ != phase::closing && stream_.socket().is_open()) {
        boost::system::error_code ec;
        if (stopped_idle_) {
            // The server is stopping and the client is between requests: send close_notify
            // and close without waiting for the client's (RFC 8446 6.1 lets the closer go
            // once it has sent its own). OpenSSL then counts the shutdown as complete as soon
            // as close_notify is written.
            ::SSL_set_shutdown(stream_.tls()->native_handle(), SSL_RECEIVED_SHUTDOWN);
        }
        stream_.expires_after(tls_shutdown_timeout);
        co_await stream_.tls()->async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
    }
    close();
}

asio::awaitable<void> http_connection::answer_error_and_close(unsigned status,
                                                              std::string message) {
    http_response res = errors_ ? errors_(status, message) : error_response(status, message);
    res.set(http::field::server, "sluice");
    if (status == 503) {
        res.set(http::field::retry_after, "1");
    }
    res.keep_alive(false);
    res.prepare_payload();
    phase_ = phase::writing;
    stream_.expires_after(limits_.write_timeout);
    boost::system::error_code ec;
    co_await http::async_write(stream_, res, asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
        co_await linger(linger_max_bytes);
    }
    co_await finish();
}

asio::awaitable<void> http_connection::linger(std::size_t max_bytes) {
    if (stream_.tls() != nullptr) {
        co_return;  // finish() sends close_notify, and reads until the client's
    }
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(linger_timeout);
    std::array<char, 16 * 1024> scratch;
    std::size_t dropped = 0;
    while (!ec && dropped < max_bytes && phase_ != phase::closing) {
        dropped += co_await stream_.async_read_some(asio::buffer(scratch),
                                                    asio::redirect_error(asio::use_awaitable, ec));
    }
}

}  // namespace sluice::gateway
