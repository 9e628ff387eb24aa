#include "gateway/http/ui_routes.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

namespace sluice::gateway {
namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr std::string_view ui_prefix = "/ui/";
constexpr std::string_view index_file = "index.html";

/// The embedded files are the binary's own: revalidate every time (the ETag makes it cheap),
/// so a new binary's files are never hidden behind a stale cached copy.
constexpr std::string_view cache_control = "no-cache";

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

/// Beast in Boost 1.74 takes boost::string_view.
boost::beast::string_view beast_view(std::string_view s) { return {s.data(), s.size()}; }

const ui_asset* find_asset(std::span<const ui_asset> assets, std::string_view path) {
    auto it = std::lower_bound(assets.begin(), assets.end(), path,
                               [](const ui_asset& a, std::string_view p) { return a.path < p; });
    return it != assets.end() && it->path == path ? &*it : nullptr;
}

asio::awaitable<handler_result> redirect_to_ui(http_request_context ctx) {
    auto res = make_response({308, "text/plain; charset=utf-8", "see /ui/\n"});
    // Keep the query: /ui?topic=t opens the page on that topic.
    const auto raw = ctx.req.target();
    const std::string_view target(raw.data(), raw.size());
    const auto q = target.find('?');
    std::string location(ui_prefix);
    if (q != std::string_view::npos) {
        location += target.substr(q);
    }
    res.set(http::field::location, location);
    co_return res;
}

asio::awaitable<handler_result> serve_asset(std::span<const ui_asset> assets,
                                            http_request_context ctx) {
    const auto raw = ctx.params.get("path").value_or("");
    auto path = percent_decode(raw);
    if (!path) {
        co_return error_response(400, "malformed percent-encoding in the path");
    }
    if (path->empty()) {
        *path = index_file;
    }
    const ui_asset* asset = find_asset(assets, *path);
    if (!asset) {
        co_return error_response(404, "no file " + std::string(ui_prefix) + *path);
    }
    const auto inm = ctx.req[http::field::if_none_match];
    http_response res;
    if (!inm.empty() && etag_matches(std::string_view(inm.data(), inm.size()), asset->etag)) {
        res = http_response{http::status::not_modified, 11};
    } else {
        res = make_response({200, std::string(ui_content_type(asset->path)),
                             std::string(asset->body)});
    }
    res.set(http::field::etag, beast_view(asset->etag));
    res.set(http::field::cache_control, beast_view(cache_control));
    res.set("X-Content-Type-Options", "nosniff");
    co_return res;
}

constexpr std::string_view console_index = "console/index.html";

/// The q of one Accept entry's parameters ("q=0.8"): 1 when absent, 0 for a malformed one.
double accept_q(std::string_view params) {
    while (!params.empty()) {
        const auto semi = params.find(';');
        const auto param = trim(params.substr(0, semi));
        if (param.size() > 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
            const std::string text(param.substr(2));
            char* end = nullptr;
            const double q = std::strtod(text.c_str(), &end);
            return end == text.c_str() + text.size() && q >= 0 && q <= 1 ? q : 0;
        }
        if (semi == std::string_view::npos) {
            break;
        }
        params.remove_prefix(semi + 1);
    }
    return 1;
}

asio::awaitable<handler_result> serve_console(std::span<const ui_asset> assets,
                                              std::shared_ptr<route_handler> fallback,
                                              http_request_context ctx) {
    const auto accept = ctx.req[http::field::accept];
    const ui_asset* asset = find_asset(assets, console_index);
    if (!asset || !accept_prefers_html(std::string_view(accept.data(), accept.size()))) {
        if (*fallback) {
            co_return co_await (*fallback)(std::move(ctx));
        }
        co_return error_response(404, "no route for GET /");
    }
    auto res = make_response({200, "text/html; charset=utf-8", std::string(asset->body)});
    res.set(http::field::etag, beast_view(asset->etag));
    res.set(http::field::cache_control, beast_view(cache_control));
    // One URL, two representations: caches must key on Accept.
    res.set(http::field::vary, "Accept");
    res.set("X-Content-Type-Options", "nosniff");
    co_return res;
}

}  // namespace

bool accept_prefers_html(std::string_view accept) {
    double html = 0;
    double json = 0;
    while (!accept.empty()) {
        const auto comma = accept.find(',');
        const auto entry = trim(accept.substr(0, comma));
        const auto semi = entry.find(';');
        std::string type(trim(entry.substr(0, semi)));
        std::transform(type.begin(), type.end(), type.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        const double q =
            accept_q(semi == std::string_view::npos ? std::string_view{} : entry.substr(semi + 1));
        if (type == "text/html" || type == "application/xhtml+xml") {
            html = std::max(html, q);
        } else if (type == "application/json" ||
                   (type.starts_with("application/vnd.") && type.ends_with("+json"))) {
            json = std::max(json, q);
        }
        if (comma == std::string_view::npos) {
            break;
        }
        accept.remove_prefix(comma + 1);
    }
    return html > 0 && html >= json;
}

std::string_view ui_content_type(std::string_view path) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 12> types{{
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".map", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"},
        {".woff2", "font/woff2"},
        {".webmanifest", "application/manifest+json"},
    }};
    const auto slash = path.rfind('/');
    const auto name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    const auto dot = name.rfind('.');
    if (dot != std::string_view::npos) {
        const auto ext = name.substr(dot);
        for (const auto& [e, type] : types) {
            if (e == ext) {
                return type;
            }
        }
    }
    return "application/octet-stream";
}

bool etag_matches(std::string_view if_none_match, std::string_view etag) {
    const auto bare = [](std::string_view tag) {
        return tag.starts_with("W/") ? tag.substr(2) : tag;
    };
    if (trim(if_none_match) == "*") {
        return true;
    }
    while (!if_none_match.empty()) {
        const auto comma = if_none_match.find(',');
        const auto tag = trim(if_none_match.substr(0, comma));
        if (!tag.empty() && bare(tag) == bare(etag)) {
            return true;
        }
        if (comma == std::string_view::npos) {
            break;
        }
        if_none_match.remove_prefix(comma + 1);
    }
    return false;
}

void add_console_route(router& routes, std::span<const ui_asset> assets) {
    // The previous GET / goes into the new handler; the slot is filled in right after.
    auto fallback = std::make_shared<route_handler>();
    auto handler = [assets, fallback](http_request_context ctx) {
        return serve_console(assets, fallback, std::move(ctx));
    };
    auto previous = routes.replace(http::verb::get, "/", std::move(handler));
    if (previous) {
        *fallback = std::move(*previous);
    }
}

void add_ui_routes(router& routes, std::span<const ui_asset> assets) {
    routes.add(http::verb::get, "/ui", redirect_to_ui);
    routes.add(http::verb::get, "/ui/{path...}", [assets](http_request_context ctx) {
        return serve_asset(assets, std::move(ctx));
    });
}

}  // namespace sluice::gateway
