#include "gateway/httpcore/router.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "gateway/core/busy_time.h"
#include "protocol/core/hex.h"

namespace sluice::gateway {
namespace http = boost::beast::http;

namespace {

/// "/a/b/" -> {"a", "b", ""}; "/" -> {""}. The path must start with '/'.
std::vector<std::string_view> split_path(std::string_view path) {
    std::vector<std::string_view> out;
    path.remove_prefix(1);
    for (;;) {
        const auto slash = path.find('/');
        out.push_back(path.substr(0, slash));
        if (slash == std::string_view::npos) {
            return out;
        }
        path.remove_prefix(slash + 1);
    }
}

bool is_capture(std::string_view segment) {
    return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

}  // namespace

std::string json_quote(std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    out += fmt::format("\\u{:04x}", c);
                } else {
                    out.push_back(static_cast<char>(c));
                }
        }
    }
    out.push_back('"');
    return out;
}

http_response make_response(http_answer answer) {
    http_response res{static_cast<http::status>(answer.status), 11};
    res.set(http::field::content_type, answer.content_type);
    res.body() = std::move(answer.body);
    return res;
}

std::string json_error(unsigned status, std::string_view message) {
    return fmt::format("{{\"error_code\":{},\"message\":{}}}", status, json_quote(message));
}

http_response error_response(unsigned status, std::string_view message) {
    return make_response({status, "application/json", json_error(status, message)});
}

std::optional<param_list> parse_query(std::string_view query) {
    param_list out;
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        if (pair.empty()) {
            continue;  // "a=1&&b=2"
        }
        const auto eq = pair.find('=');
        auto name = percent_decode(pair.substr(0, eq), true);
        auto value = percent_decode(
            eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
        if (!name || !value) {
            return std::nullopt;
        }
        out.add(std::move(*name), std::move(*value));
    }
    return out;
}

void finish_signal::on_request(std::function<void()> fn) {
    fn_ = std::move(fn);
    if (requested_ && fn_) {
        fn_();
    }
}

void finish_signal::request() {
    if (requested_) {
        return;
    }
    requested_ = true;
    if (fn_) {
        // The callback may replace or clear itself.
        auto fn = fn_;
        fn();
    }
}

std::string allow_header(const std::vector<http::verb>& methods) {
    std::string out;
    for (auto m : methods) {
        if (!out.empty()) {
            out += ", ";
        }
        out += std::string(http::to_string(m));
    }
    return out;
}

/// One segment position of the trie. A route ends at a node (its `routes`, by method); the
/// capture names live with the route, so /a/{x} and /a/{y}/b share the capture node.
struct router::node {
    struct route {
        route_handler handler;
        std::string pattern;
        std::vector<std::string> capture_names;  // in path order; a rest's name last
        bool streamed_body = false;
    };
    std::map<std::string, std::unique_ptr<node>, std::less<>> literals;
    std::unique_ptr<node> capture;
    std::unique_ptr<node> rest;
    std::map<http::verb, route> routes;
};

router::router() : root_(std::make_unique<node>()) {}
router::~router() = default;

void router::add(http::verb method, std::string_view pattern, route_handler handler,
                 bool streamed_body) {
    if (pattern.empty() || pattern.front() != '/') {
        throw std::invalid_argument("route pattern '" + std::string(pattern) +
                                    "' must start with '/'");
    }
    const auto segments = split_path(pattern);
    node* at = root_.get();
    std::vector<std::string> names;
    for (std::size_t i = 0; i < segments.size(); ++i) {
        const std::string_view seg = segments[i];
        if (is_capture(seg)) {
            std::string_view name = seg.substr(1, seg.size() - 2);
            const bool is_rest = name.size() > 3 && name.substr(name.size() - 3) == "...";
            if (is_rest) {
                name.remove_suffix(3);
                if (i + 1 != segments.size()) {
                    throw std::invalid_argument("route pattern '" + std::string(pattern) + "': {" +
                                                std::string(name) +
                                                "...} must be the last segment");
                }
            }
            if (name.empty() || name.find_first_of("{}/.") != std::string_view::npos) {
                throw std::invalid_argument("route pattern '" + std::string(pattern) +
                                            "': bad capture '" + std::string(seg) + "'");
            }
            if (std::find(names.begin(), names.end(), name) != names.end()) {
                throw std::invalid_argument("route pattern '" + std::string(pattern) +
                                            "': capture '" + std::string(name) + "' twice");
            }
            names.emplace_back(name);
            auto& next = is_rest ? at->rest : at->capture;
            if (!next) {
                next = std::make_unique<node>();
            }
            at = next.get();
            continue;
        }
        if (seg.find_first_of("{}%") != std::string_view::npos) {
            throw std::invalid_argument("route pattern '" + std::string(pattern) +
                                        "': literal segment '" + std::string(seg) +
                                        "' may not contain '{', '}' or '%'");
        }
        auto it = at->literals.find(seg);
        if (it == at->literals.end()) {
            it = at->literals.emplace(std::string(seg), std::make_unique<node>()).first;
        }
        at = it->second.get();
    }
    if (at->routes.contains(method)) {
        throw std::invalid_argument("route " + std::string(http::to_string(method)) + " " +
                                    std::string(pattern) + " already registered (as " +
                                    at->routes.at(method).pattern + ")");
    }
    at->routes.emplace(method, node::route{std::move(handler), std::string(pattern),
                                           std::move(names), streamed_body});
}

std::optional<route_handler> router::replace(http::verb method, std::string_view pattern,
                                             route_handler handler) {
    // Walk the pattern as add() does, without creating nodes; a missing one means no route.
    node* at = root_.get();
    if (!pattern.empty() && pattern.front() == '/') {
        for (const std::string_view seg : split_path(pattern)) {
            if (!at) {
                break;
            }
            if (is_capture(seg)) {
                at = seg.ends_with("...}") ? at->rest.get() : at->capture.get();
            } else {
                auto it = at->literals.find(seg);
                at = it == at->literals.end() ? nullptr : it->second.get();
            }
        }
    } else {
        at = nullptr;
    }
    if (at) {
        auto it = at->routes.find(method);
        if (it != at->routes.end() && it->second.pattern == pattern) {
            return std::exchange(it->second.handler, std::move(handler));
        }
    }
    add(method, pattern, std::move(handler));
    return std::nullopt;
}

namespace {

/// The state of one find(): the decoded segments and what the walk has seen so far.
struct walk {
    http::verb method;
    std::string_view path;
    std::vector<std::string_view> raw;
    std::vector<std::optional<std::string>> decoded;
    std::vector<std::string> values;  // captures bound along the current branch
    bool malformed = false;
    std::set<http::verb> allowed;  // methods of every route whose pattern matches the path
};

}  // namespace

router::match router::find(http::verb method, std::string_view path) const {
    match out;
    if (path.empty() || path.front() != '/') {
        return out;  // absolute-form or "*": no route serves it
    }
    walk w{method, path, split_path(path), {}, {}, false, {}};
    w.decoded.reserve(w.raw.size());
    for (auto seg : w.raw) {
        w.decoded.push_back(percent_decode(seg));
        w.malformed = w.malformed || !w.decoded.back();
    }

    // Depth-first in precedence order; the first route accepting the method wins.
    const node::route* found = nullptr;
    std::vector<std::string> found_values;
    auto at_end = [&](const node& n) {
        if (n.routes.empty()) {
            return false;
        }
        auto it = n.routes.find(method);
        if (it == n.routes.end() && method == http::verb::head) {
            it = n.routes.find(http::verb::get);
        }
        for (const auto& [m, r] : n.routes) {
            w.allowed.insert(m);
            if (m == http::verb::get) {
                w.allowed.insert(http::verb::head);
            }
        }
        if (it == n.routes.end()) {
            return false;
        }
        found = &it->second;
        found_values = w.values;
        return true;
    };
    std::function<bool(const node&, std::size_t)> visit = [&](const node& n, std::size_t i) {
        if (i == w.raw.size()) {
            return at_end(n);
        }
        const auto& seg = w.decoded[i];
        if (seg) {
            if (auto it = n.literals.find(*seg); it != n.literals.end()) {
                if (visit(*it->second, i + 1)) {
                    return true;
                }
            }
            if (n.capture && !seg->empty()) {
                w.values.push_back(*seg);
                if (visit(*n.capture, i + 1)) {
                    return true;
                }
                w.values.pop_back();
            }
        }
        if (n.rest) {
            // The raw remainder: everything after the '/' that ends the previous segment.
            const auto start = static_cast<std::size_t>(w.raw[i].data() - w.path.data());
            w.values.emplace_back(w.path.substr(start));
            if (at_end(*n.rest)) {
                return true;
            }
            w.values.pop_back();
        }
        return false;
    };
    if (visit(*root_, 0)) {
        out.result = match::outcome::found;
        out.handler = &found->handler;
        out.pattern = found->pattern;
        out.streamed_body = found->streamed_body;
        for (std::size_t i = 0; i < found_values.size(); ++i) {
            out.params.add(found->capture_names[i], std::move(found_values[i]));
        }
        return out;
    }
    if (!w.allowed.empty()) {
        out.result = match::outcome::method_not_allowed;
        out.allowed.assign(w.allowed.begin(), w.allowed.end());
        return out;
    }
    out.result = w.malformed ? match::outcome::bad_request : match::outcome::not_found;
    return out;
}

bool router::streams_body(http::verb method, std::string_view path) const {
    const auto q = path.find('?');
    const auto m = find(method, path.substr(0, q));
    return m.result == match::outcome::found && m.streamed_body;
}

namespace {

/// "use GET" / "use GET or POST": the 405 message (HEAD is implied by GET).
std::string use_message(const std::vector<http::verb>& allowed) {
    std::string out;
    const bool has_get =
        std::find(allowed.begin(), allowed.end(), http::verb::get) != allowed.end();
    for (auto m : allowed) {
        if (m == http::verb::head && has_get) {
            continue;
        }
        out += out.empty() ? "use " : " or ";
        out += std::string(http::to_string(m));
    }
    return out;
}

}  // namespace

namespace {

/// What dispatch does to every buffered answer: the request's version, the Content-Length
/// (none for 1xx, 204 and 304), no body for HEAD.
http_response finished(http_response answer, unsigned version, http::verb method) {
    answer.version(version);
    const auto status = answer.result();
    if (http::to_status_class(status) == http::status_class::informational ||
        status == http::status::no_content || status == http::status::not_modified) {
        // No content, and no Content-Length from Beast, which would write 0: RFC 9110 (8.6)
        // forbids one in a 1xx or 204, and in a 304 allows only the length a 200 would have.
        answer.body().clear();
    } else {
        answer.prepare_payload();
    }
    if (method == http::verb::head) {
        answer.body().clear();  // the Content-Length of the GET answer stays
    }
    return answer;
}

}  // namespace

boost::asio::awaitable<handler_result> router::dispatch(http_request_context ctx) const {
    auto admission = co_await admit(ctx);
    if (auto* answer = std::get_if<http_response>(&admission)) {
        co_return handler_result{std::move(*answer)};
    }
    co_return co_await serve(std::move(ctx), std::get<admitted>(admission));
}

boost::asio::awaitable<std::variant<http_response, router::admitted>> router::admit(
    http_request_context& ctx) const {
    const auto version = ctx.req.version();
    const auto method = ctx.req.method();
    const auto raw_target = ctx.req.target();  // boost::string_view in Boost 1.74
    const std::string_view target(raw_target.data(), raw_target.size());
    const auto q = target.find('?');
    ctx.path = std::string(target.substr(0, q));
    const std::string method_name(ctx.req.method_string());

    auto m = find(method, ctx.path);
    std::optional<http_response> answer;
    switch (m.result) {
        case match::outcome::found: break;
        case match::outcome::not_found:
            answer = error_response(404, "no route for " + method_name + " " + ctx.path);
            break;
        case match::outcome::method_not_allowed:
            answer = error_response(405, use_message(m.allowed));
            answer->set(http::field::allow, allow_header(m.allowed));
            break;
        case match::outcome::bad_request:
            answer = error_response(400, "malformed percent-encoding in the path");
            break;
    }
    if (!answer) {
        auto query =
            parse_query(q == std::string_view::npos ? std::string_view() : target.substr(q + 1));
        if (!query) {
            answer = error_response(400, "malformed percent-encoding in the query string");
        } else {
            ctx.query = std::move(*query);
            ctx.params = std::move(m.params);
            if (!ctx.finish) {
                ctx.finish = std::make_shared<finish_signal>();
            }
            if (guard_) {
                answer = co_await guard_(&ctx, m.pattern);
            }
            if (!answer) {
                co_return admitted{m.handler};
            }
        }
    }
    co_return finished(std::move(*answer), version, method);
}

boost::asio::awaitable<handler_result> router::serve(http_request_context ctx,
                                                     admitted route) const {
    const auto version = ctx.req.version();
    const auto method = ctx.req.method();
    const std::size_t body_bytes = ctx.req.body().size();
    auto after = std::move(ctx.after);
    std::shared_ptr<busy_clock> busy;
    handler_result result;
    if (ctx.meter_busy_time) {
        busy = std::make_shared<busy_clock>();
        auto ex = co_await boost::asio::this_coro::executor;
        result = co_await boost::asio::co_spawn(metered_executor(ex, busy),
                                                (*route.handler)(std::move(ctx)),
                                                boost::asio::use_awaitable);
    } else {
        result = co_await (*route.handler)(std::move(ctx));
    }
    if (after) {
        after(std::get_if<http_response>(&result),
              busy ? busy->total() : std::chrono::nanoseconds(0), body_bytes);
    }
    if (std::holds_alternative<stream_taken>(result)) {
        co_return result;
    }
    co_return finished(std::move(std::get<http_response>(result)), version, method);
}

}  // namespace sluice::gateway
