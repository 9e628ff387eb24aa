#include "gateway/http/console_users.h"

#include <array>
#include <exception>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "gateway/core/logger.h"
#include "gateway/http/json.h"
#include "gateway/policy/audit.h"

namespace sluice::gateway {
namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr std::array<std::string_view, 3> console_mechanisms = {"PLAIN", "SCRAM-SHA-256",
                                                                "SCRAM-SHA-512"};

http_response users_json(unsigned status, std::string body) {
    return make_response({status, "application/json", std::move(body)});
}

/// The mechanisms `c` serves, with their iteration counts, in console_mechanisms' order.
std::vector<std::pair<std::string_view, int>> mechanisms_of(const auth::user_credentials& c) {
    std::vector<std::pair<std::string_view, int>> out;
    if (c.plain) {
        out.emplace_back(console_mechanisms[0], c.plain->iterations);
    }
    if (c.scram_sha_256) {
        out.emplace_back(console_mechanisms[1], c.scram_sha_256->iterations);
    }
    if (c.scram_sha_512) {
        out.emplace_back(console_mechanisms[2], c.scram_sha_512->iterations);
    }
    return out;
}

std::vector<std::string> mechanism_names(const std::optional<auth::user_credentials>& c) {
    std::vector<std::string> out;
    if (c) {
        for (const auto& [m, n] : mechanisms_of(*c)) {
            out.emplace_back(m);
        }
    }
    return out;
}

void write_user(json::writer& w, std::string_view name, const auth::user_credentials& c) {
    w.start_object();
    w.field("name", name);
    w.key("mechanisms");
    w.start_array();
    for (const auto& [m, n] : mechanisms_of(c)) {
        w.start_object();
        w.field("mechanism", m);
        w.field("iterations", std::int64_t{n});
        w.end_object();
    }
    w.end_array();
    w.end_object();
}

/// A POST or PUT body, checked. The password stays in this struct only.
struct user_request {
    std::string name;  // POST only
    std::string password;
    std::set<std::string_view> mechanisms;  // empty: the default (all, or the user's)
    int iterations = console_min_iterations;
};

std::variant<user_request, std::string> parse_user_request(std::string_view body,
                                                           bool with_name) {
    json::document doc;
    if (auto err = json::parse(body, doc)) {
        return "the body is not JSON: " + *err;
    }
    if (!doc.IsObject()) {
        return std::string("the body must be a JSON object");
    }
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string_view field = json::as_view(it->name);
        if (field != "password" && field != "mechanisms" && field != "iterations" &&
            (field != "name" || !with_name)) {
            return "unknown field " + std::string(field) +
                   (with_name ? " (name, password, mechanisms, iterations)"
                              : " (password, mechanisms, iterations)");
        }
    }
    user_request r;
    if (with_name) {
        const auto name = json::get_string(doc, "name");
        if (!name || name->empty()) {
            return std::string("name (the user's name) is required");
        }
        if (!auth::valid_user_name(*name)) {
            return std::string("the user name must be 1 to 255 bytes without spaces or control "
                               "characters");
        }
        r.name = std::string(*name);
    }
    const auto password = json::get_string(doc, "password");
    if (!password || password->empty()) {
        return std::string("password (a non-empty string) is required");
    }
    if (password->find('\0') != std::string_view::npos) {
        // PLAIN separates the user from the password with NUL: such a password never logs in.
        return std::string("the password must not contain a NUL character");
    }
    r.password = std::string(*password);
    if (const auto* list = json::member(doc, "mechanisms")) {
        const std::string expected =
            "mechanisms must be a non-empty array of \"PLAIN\", \"SCRAM-SHA-256\" and "
            "\"SCRAM-SHA-512\"";
        if (!list->IsArray() || list->Empty()) {
            return expected;
        }
        for (const auto& m : list->GetArray()) {
            if (!m.IsString()) {
                return expected;
            }
            const auto name = json::as_view(m);
            bool known = false;
            for (const auto k : console_mechanisms) {
                if (k == name) {
                    r.mechanisms.insert(k);
                    known = true;
                }
            }
            if (!known) {
                return "unknown mechanism " + std::string(name) +
                       " (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)";
            }
        }
    }
    if (json::member(doc, "iterations") != nullptr) {
        const auto n = json::get_int(doc, "iterations");
        if (!n || *n < console_min_iterations || *n > console_max_iterations) {
            return "iterations must be a whole number from " +
                   std::to_string(console_min_iterations) + " to " +
                   std::to_string(console_max_iterations);
        }
        r.iterations = static_cast<int>(*n);
    }
    return r;
}

/// The credentials a password gives for the mechanisms asked: each SCRAM credential and the
/// PLAIN verifier with its own random salt, as `sluice users set` makes them.
auth::user_credentials credentials_for(const user_request& r,
                                       const std::set<std::string_view>& mechanisms) {
    auth::user_credentials c;
    if (mechanisms.contains(console_mechanisms[0])) {
        c.plain = auth::make_plain_verifier(r.password, r.iterations);
    }
    if (mechanisms.contains(console_mechanisms[1])) {
        c.scram_sha_256 =
            auth::make_scram_credential(auth::hash_algorithm::sha256, r.password, r.iterations);
    }
    if (mechanisms.contains(console_mechanisms[2])) {
        c.scram_sha_512 =
            auth::make_scram_credential(auth::hash_algorithm::sha512, r.password, r.iterations);
    }
    return c;
}

/// Stores a change (native: the store's file; upstream: the shared state first) and audits it;
/// an error answer when it could not be stored (nothing changed then).
asio::awaitable<std::optional<http_response>> apply_user_change(
    const console_user_services* svc, const http_request_context& ctx, std::string user,
    std::optional<auth::user_credentials> creds, std::string_view what) {
    const auto before = svc->users.find(user);
    if (svc->shared != nullptr) {
        std::string failure;
        try {
            co_await svc->shared->store(user, creds);
        } catch (const std::exception& e) {
            failure = e.what();
        }
        if (!failure.empty()) {
            auth_log().error("console: the {} of user '{}' was not stored: {}", what, user,
                             failure);
            co_return error_response(503, "user " + user + " not changed: " + failure);
        }
        // The gateway's copy of the shared state applies the same record when it reads it.
        svc->users.replace(user, creds);
    } else {
        svc->users.replace(user, creds);
        try {
            // A small file, rarely written: saved (with fsync) here, as the Kafka handler does.
            svc->users.save();
        } catch (const std::exception& e) {
            svc->users.replace(user, before);
            auth_log().error("console: cannot save the users: {}", e.what());
            co_return error_response(500, "user " + user +
                                              " not changed: the credentials could not be saved");
        }
    }
    std::string mechanisms;
    for (const auto& m : mechanism_names(creds)) {
        mechanisms += mechanisms.empty() ? m : ", " + m;
    }
    auth_log().info("{} from {}: {} of user '{}' through the console ({})", ctx.principal,
                    ctx.peer.address().to_string(), what, user,
                    creds ? mechanisms : std::string("no credentials left"));
    audit_user_changed(audit_source{ctx.principal, audit_client_of(ctx.peer), "http"}, user,
                       !creds, mechanism_names(creds), "console");
    co_return std::nullopt;
}

asio::awaitable<handler_result> list_users(const console_user_services* svc,
                                           http_request_context) {
    json::writer w;
    w.start_object();
    w.key("users");
    w.start_array();
    for (const auto& name : svc->users.users()) {
        if (auto c = svc->users.find(name)) {
            write_user(w, name, *c);
        }
    }
    w.end_array();
    w.end_object();
    co_return users_json(200, w.str());
}

asio::awaitable<handler_result> create_user(const console_user_services* svc,
                                            http_request_context ctx) {
    auto parsed = parse_user_request(ctx.req.body(), true);
    if (auto* message = std::get_if<std::string>(&parsed)) {
        co_return error_response(400, *message);
    }
    auto req = std::get<user_request>(std::move(parsed));
    if (svc->users.find(req.name)) {
        co_return error_response(409, "user " + req.name +
                                          " exists (change its password with PUT "
                                          "/v1/console/users/{user})");
    }
    auto mechanisms = req.mechanisms;
    if (mechanisms.empty()) {
        mechanisms.insert(console_mechanisms.begin(), console_mechanisms.end());
    }
    auto creds = credentials_for(req, mechanisms);
    if (auto bad = co_await apply_user_change(svc, ctx, req.name, creds, "creation")) {
        co_return std::move(*bad);
    }
    json::writer w;
    write_user(w, req.name, creds);
    co_return users_json(201, w.str());
}

asio::awaitable<handler_result> change_password(const console_user_services* svc,
                                                http_request_context ctx) {
    const std::string name(ctx.params.get("user").value_or(""));
    auto parsed = parse_user_request(ctx.req.body(), false);
    if (auto* message = std::get_if<std::string>(&parsed)) {
        co_return error_response(400, *message);
    }
    auto req = std::get<user_request>(std::move(parsed));
    const auto current = svc->users.find(name);
    if (!current) {
        co_return error_response(404, "no user " + name);
    }
    auto mechanisms = req.mechanisms;
    if (mechanisms.empty()) {
        for (const auto& [m, n] : mechanisms_of(*current)) {
            mechanisms.insert(m);
        }
    }
    auto creds = credentials_for(req, mechanisms);
    if (auto bad = co_await apply_user_change(svc, ctx, name, creds, "new password")) {
        co_return std::move(*bad);
    }
    json::writer w;
    write_user(w, name, creds);
    co_return users_json(200, w.str());
}

asio::awaitable<handler_result> delete_user(const console_user_services* svc,
                                            http_request_context ctx) {
    const std::string name(ctx.params.get("user").value_or(""));
    if (!svc->users.find(name)) {
        co_return error_response(404, "no user " + name);
    }
    if (auto bad = co_await apply_user_change(svc, ctx, name, std::nullopt, "deletion")) {
        co_return std::move(*bad);
    }
    co_return make_response({204, "application/json", ""});
}

}  // namespace

void add_console_user_routes(router& routes, console_user_services svc) {
    auto shared = std::make_shared<const console_user_services>(svc);
    auto bind = [shared](auto fn) {
        return [shared, fn](http_request_context ctx) { return fn(shared.get(), std::move(ctx)); };
    };
    routes.add(http::verb::get, "/v1/console/users", bind(list_users));
    routes.add(http::verb::post, "/v1/console/users", bind(create_user));
    routes.add(http::verb::put, "/v1/console/users/{user}", bind(change_password));
    routes.add(http::verb::delete_, "/v1/console/users/{user}", bind(delete_user));
}

}  // namespace sluice::gateway
