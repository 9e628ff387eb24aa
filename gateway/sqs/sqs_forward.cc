#include "gateway/sqs/sqs_forward.h"

#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "protocol/core/json.h"

namespace sluice::gateway::sqs {
namespace asio = boost::asio;
namespace beast = boost::beast;

struct forward_pool::connection {
    explicit connection(const asio::any_io_executor& ex) : stream(ex) {}
    beast::tcp_stream stream;
    std::chrono::steady_clock::time_point idle_since{};
};

namespace {

/// An idle pooled connection that can still carry a request: the owner has not closed it and
/// sent nothing since the last answer (a non-blocking peek; nothing is consumed).
bool still_open(beast::tcp_stream& stream) {
    char b = 0;
    const ssize_t n = ::recv(stream.socket().native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/// The queue name at the end of a QueueUrl, or nullopt.
std::optional<std::string> queue_of_url(std::string_view u) {
    const std::string_view name = queue_name_in_url(u);
    if (name.empty()) {
        return std::nullopt;
    }
    return std::string(name);
}

/// host and port of an http:// base URL, or an error.
bool split_base(const std::string& base, std::string& host, std::string& port,
                std::string* error) {
    constexpr std::string_view scheme = "http://";
    if (!base.starts_with(scheme)) {
        *error = "the owner's SQS address " + base + " is not an http:// URL";
        return false;
    }
    std::string authority = base.substr(scheme.size());
    if (auto slash = authority.find('/'); slash != std::string::npos) {
        authority.resize(slash);
    }
    host = authority;
    port = "80";
    if (auto colon = authority.rfind(':'); colon != std::string::npos &&
                                           authority.find(']', colon) == std::string::npos) {
        host = authority.substr(0, colon);
        port = authority.substr(colon + 1);
    }
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    return true;
}

}  // namespace

std::string_view queue_name_in_url(std::string_view url) {
    url = url.substr(0, url.find('?'));
    const auto slash = url.rfind('/');
    return slash == std::string_view::npos ? url : url.substr(slash + 1);
}

std::optional<std::string> sent_to_queue(const http_request_context& ctx) {
    const auto& req = ctx.req;
    if (auto t = req.find("X-Amz-Target"); t != req.end()) {
        const std::string_view target(t->value().data(), t->value().size());
        if (target != "AmazonSQS.SendMessage" && target != "AmazonSQS.SendMessageBatch") {
            return std::nullopt;
        }
        rapidjson::Document doc;
        if (!protocol::parse_json(doc, req.body()) || !doc.IsObject()) {
            return std::nullopt;
        }
        auto it = doc.FindMember("QueueUrl");
        if (it == doc.MemberEnd() || !it->value.IsString()) {
            return std::nullopt;
        }
        return queue_of_url(std::string_view(it->value.GetString(), it->value.GetStringLength()));
    }
    auto form = parse_query(req.body());
    if (!form) {
        return std::nullopt;
    }
    // The body wins over the query string, and a repeated body field's last value (as the
    // front reads them).
    auto field = [&](std::string_view name) -> std::optional<std::string_view> {
        if (auto all = form->all(name); !all.empty()) {
            return all.back();
        }
        return ctx.query.get(name);
    };
    const auto action = field("Action");
    if (!action || (*action != "SendMessage" && *action != "SendMessageBatch")) {
        return std::nullopt;
    }
    const auto url = field("QueueUrl");
    return url ? queue_of_url(*url) : std::nullopt;
}

forward_pool::forward_pool(std::size_t max_idle, std::chrono::milliseconds max_idle_age)
    : max_idle_(max_idle), max_idle_age_(max_idle_age) {}

forward_pool::~forward_pool() = default;

void forward_pool::close() {
    std::map<std::string, std::deque<std::unique_ptr<connection>>> idle;
    {
        std::lock_guard lock(mu_);
        closed_ = true;
        idle.swap(idle_);
    }
}

std::unique_ptr<forward_pool::connection> forward_pool::take(const std::string& base,
                                                             const asio::any_io_executor& ex) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    auto it = idle_.find(base);
    if (it == idle_.end()) {
        return nullptr;
    }
    auto& q = it->second;
    // The most recently used first (the least likely closed); only one of the caller's io
    // context (a connection is driven by the thread of its own context).
    for (auto c = q.end(); c != q.begin();) {
        --c;
        if (now - (*c)->idle_since >= max_idle_age_ || !still_open((*c)->stream)) {
            c = q.erase(c);  // closed by the owner, or idle too long: dropped, nothing sent
            continue;
        }
        if ((*c)->stream.get_executor() == ex) {
            auto found = std::move(*c);
            q.erase(c);
            return found;
        }
    }
    return nullptr;
}

void forward_pool::give_back(const std::string& base, std::unique_ptr<connection> c) {
    c->idle_since = std::chrono::steady_clock::now();
    c->stream.expires_never();
    std::lock_guard lock(mu_);
    if (closed_) {
        return;  // c closes here, on its own io thread
    }
    auto& q = idle_[base];
    while (!q.empty() && c->idle_since - q.front()->idle_since >= max_idle_age_) {
        q.pop_front();
    }
    if (q.size() < max_idle_) {
        q.push_back(std::move(c));
    }
}

asio::awaitable<std::optional<http_response>> forward_pool::send(std::string base,
                                                                 http_request req,
                                                                 std::chrono::milliseconds timeout,
                                                                 std::string* error) {
    std::string host;
    std::string port;
    if (!split_base(base, host, port, error)) {
        co_return std::nullopt;
    }
    const auto ex = co_await asio::this_coro::executor;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    req.set(forwarded_header, "1");
    req.keep_alive(true);
    req.prepare_payload();
    boost::system::error_code ec;
    for (int attempt = 0;; ++attempt) {
        auto c = take(base, ex);
        const bool reused = c != nullptr;
        if (!c) {
            c = std::make_unique<connection>(ex);
            asio::ip::tcp::resolver resolver(ex);
            auto found = co_await resolver.async_resolve(
                host, port, asio::redirect_error(asio::use_awaitable, ec));
            if (ec) {
                *error = "the owner " + base + " cannot be resolved: " + ec.message();
                co_return std::nullopt;
            }
            c->stream.expires_at(deadline);
            co_await c->stream.async_connect(found, asio::redirect_error(asio::use_awaitable, ec));
            if (ec) {
                *error = "the owner " + base + " cannot be reached: " + ec.message();
                co_return std::nullopt;
            }
            c->stream.socket().set_option(asio::ip::tcp::no_delay(true), ec);
            opened_.fetch_add(1, std::memory_order_relaxed);
        }
        c->stream.expires_at(deadline);
        const std::size_t written = co_await beast::http::async_write(
            c->stream, req, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (reused && written == 0 && attempt == 0) {
                continue;  // a dead pooled connection, nothing sent: once more, on a fresh one
            }
            *error = "the request could not be sent to the owner " + base + ": " + ec.message();
            co_return std::nullopt;
        }
        beast::flat_buffer buffer;
        beast::http::response_parser<beast::http::string_body> parser;
        parser.body_limit(64 * 1024 * 1024);
        co_await beast::http::async_read(c->stream, buffer, parser,
                                         asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            // Sent: the owner may have served it, so it is never sent again.
            *error = "the owner " + base + " did not answer: " + ec.message();
            co_return std::nullopt;
        }
        http_response res = parser.release();
        // Kept for the next request when the owner keeps it open and sent nothing more.
        if (res.keep_alive() && buffer.size() == 0) {
            give_back(base, std::move(c));
        } else {
            c->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
        }
        res.erase(beast::http::field::connection);
        res.erase(beast::http::field::transfer_encoding);
        res.erase(beast::http::field::keep_alive);
        res.version(req.version());
        res.prepare_payload();
        co_return res;
    }
}

}  // namespace sluice::gateway::sqs
