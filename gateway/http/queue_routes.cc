#include "gateway/http/queue_routes.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "backend/api/errc.h"
#include "gateway/http/json.h"
#include "gateway/http/rest/rest_support.h"
#include "gateway/httpcore/logger.h"
#include "gateway/http/http_auth.h"
#include "gateway/policy/front_acls.h"

namespace sluice::gateway {
namespace asio = boost::asio;
namespace api = backend::api;
using boost::beast::http::verb;

namespace {

/// The rate bounds of StartMessageMoveTask.
constexpr std::int64_t min_per_second = 1;
constexpr std::int64_t max_per_second = 500;
/// How many tasks GET .../move-tasks lists (the most list_message_move_tasks gives).
constexpr std::int32_t listed_tasks = 10;

http_response json_ok(unsigned status, std::string body) {
    return make_response({status, "application/json", std::move(body)});
}

/// Every queue's view by name, and which queues name each one as their dead-letter queue.
struct queue_table {
    std::map<std::string, api::queue_view, std::less<>> by_name;
    std::map<std::string, std::vector<std::string>, std::less<>> sources;

    explicit queue_table(const api::queues& queues) {
        for (auto& v : queues.view_queues()) {
            if (v.dead_letter_queue) {
                sources[v.dead_letter_queue->value].push_back(v.name.value);
            }
            std::string name = v.name.value;
            by_name.emplace(std::move(name), std::move(v));
        }
        for (auto& [dlq, list] : sources) {
            std::sort(list.begin(), list.end());
        }
    }

    const api::queue_view* find(std::string_view name) const {
        auto it = by_name.find(name);
        return it == by_name.end() ? nullptr : &it->second;
    }
    const std::vector<std::string>* sources_of(std::string_view name) const {
        auto it = sources.find(name);
        return it == sources.end() ? nullptr : &it->second;
    }
};

/// Whether the caller may DESCRIBE a queue's topic. A view names other queues (the queues that
/// send to it, the depth of its dead-letter queue) only when it may, as GET /v1/queues lists
/// only those and SQS's ListQueues and ListDeadLetterSourceQueues answer only those.
struct describable {
    policy_chain chain;
    std::string principal;
    std::string host;

    bool operator()(std::string_view queue) const {
        const requester who{.front = policy_front::console, .principal = principal, .host = host};
        return chain.visible(who, auth::acl_operation::describe, auth::resource_type::topic,
                             queue);
    }
};

describable describable_by(policy_chain chain, const http_request_context& ctx) {
    return describable{chain, ctx.principal,
                       chain.authorizing() ? authorizer_host(ctx.peer) : std::string()};
}

void write_queue(json::writer& w, const queue_table& table, const api::queue_view& v,
                 const describable& may_describe) {
    w.start_object();
    w.field("name", v.name.value);
    w.key("fifo");
    w.boolean(v.fifo);
    w.field("available", v.available);
    w.field("in_flight", v.in_flight);
    w.field("delayed", v.delayed);
    w.field("oldest_age_ms", v.oldest_age_ms);
    w.field("waiting_receives", v.waiting_receives);
    if (v.dead_letter_queue) {
        w.field("dead_letter_queue", v.dead_letter_queue->value);
        // The depth of the dead-letter queue: what a redrive would move back.
        const api::queue_view* dlq = table.find(v.dead_letter_queue->value);
        if (dlq && may_describe(dlq->name.value)) {
            w.field("dead_letter_queue_depth", dlq->available + dlq->in_flight + dlq->delayed);
        } else {
            w.null_field("dead_letter_queue_depth");
        }
    } else {
        w.null_field("dead_letter_queue");
        w.null_field("dead_letter_queue_depth");
    }
    // The queues whose RedrivePolicy names this one: non-empty makes it a dead-letter queue.
    w.key("dead_letter_sources");
    w.start_array();
    if (const auto* src = table.sources_of(v.name.value)) {
        for (const auto& s : *src) {
            if (may_describe(s)) {
                w.string(s);
            }
        }
    }
    w.end_array();
    w.end_object();
}

/// The HTTP status for a backend error of the queue calls used here.
unsigned status_of(const api::backend_error& e) {
    switch (api::reason(e.code)) {
    case api::errc::queue_does_not_exist:
    case api::errc::resource_not_found:
        return 404;
    case api::errc::invalid_parameter_value:
    case api::errc::invalid_attribute_name:
    case api::errc::invalid_attribute_value:
        return 400;
    case api::errc::unsupported_operation:
        return 409;
    case api::errc::not_leader:
        return 503;
    default:
        return 500;
    }
}

http_response backend_error(const api::backend_error& e, std::string_view what) {
    std::string message(what);
    if (!e.message.empty()) {
        message += ": " + e.message;
    }
    return error_response(status_of(e), message);
}

std::string not_found(std::string_view queue) {
    return "queue " + std::string(queue) + " not found";
}

/// The queue's ARN, as the move-task calls name queues.
asio::awaitable<api::backend_result<std::string>> queue_arn(api::queues& queues,
                                                          std::string name) {
    std::vector<std::string> names{"QueueArn"};
    auto attrs = co_await queues.get_attributes(api::queue_name(std::move(name)), std::move(names));
    if (!attrs) {
        co_return std::unexpected(attrs.error());
    }
    auto it = attrs->find("QueueArn");
    if (it == attrs->end()) {
        co_return std::unexpected(
            api::backend_error{api::make_error_code(api::errc::unknown), "the queue has no ARN"});
    }
    co_return it->second;
}

asio::awaitable<handler_result> list_queues(api::queues* queues, policy_chain chain,
                                            http_request_context ctx) {
    const queue_table table(*queues);
    const auto may_describe = describable_by(chain, ctx);
    json::writer w;
    w.start_object();
    w.key("queues");
    w.start_array();
    for (const auto& [name, v] : table.by_name) {
        if (may_describe(name)) {
            write_queue(w, table, v, may_describe);
        }
    }
    w.end_array();
    w.end_object();
    co_return json_ok(200, w.str());
}

asio::awaitable<handler_result> get_queue(api::queues* queues, policy_chain chain,
                                          http_request_context ctx) {
    const std::string name(ctx.params.get("queue").value_or(""));
    const queue_table table(*queues);
    const api::queue_view* v = table.find(name);
    if (!v) {
        co_return error_response(404, not_found(name));
    }
    json::writer w;
    write_queue(w, table, *v, describable_by(chain, ctx));
    co_return json_ok(200, w.str());
}

asio::awaitable<handler_result> redrive(api::queues* queues, policy_chain chain,
                                        http_request_context ctx) {
    const std::string name(ctx.params.get("queue").value_or(""));
    auto parsed = parse_redrive_request(ctx.req.body());
    if (auto* message = std::get_if<std::string>(&parsed)) {
        co_return error_response(400, *message);
    }
    auto req = std::get<redrive_request>(std::move(parsed));
    {
        const queue_table table(*queues);
        if (!table.find(name)) {
            co_return error_response(404, not_found(name));
        }
        const auto* sources = table.sources_of(name);
        if (!sources) {
            co_return error_response(400, "queue " + name +
                                              " is not a dead-letter queue: no queue's "
                                              "RedrivePolicy names it");
        }
        if (req.destination && !table.find(*req.destination)) {
            co_return error_response(404, "destination " + not_found(*req.destination));
        }
        // The task writes to the destination, or back to the queues that name this one (the
        // router's guard checked ALTER on this queue): WRITE there, as StartMessageMoveTask.
        if (chain.authorizing()) {
            const std::vector<std::string> targets =
                req.destination ? std::vector<std::string>{*req.destination} : *sources;
            const auto checks = sqs_move_task_checks(name, std::nullopt, targets);
            if (auto denied = refused_check(chain, http_requester(ctx, policy_front::console),
                                            "POST /v1/queues/{queue}/redrive", checks)) {
                co_return rest::acl_denied(*denied, false);
            }
        }
    }
    auto source = co_await queue_arn(*queues, name);
    if (!source) {
        co_return backend_error(source.error(), "queue " + name);
    }
    std::optional<std::string> destination;
    if (req.destination) {
        auto arn = co_await queue_arn(*queues, *req.destination);
        if (!arn) {
            co_return backend_error(arn.error(), "destination queue " + *req.destination);
        }
        destination = std::move(*arn);
    }
    auto task = co_await queues->start_message_move_task(*source, destination,
                                                         req.max_per_second);
    if (!task) {
        co_return backend_error(task.error(), "redrive of " + name);
    }
    http_log().info("redrive of queue {} started (task {}, to {})", name, *task,
                 req.destination.value_or("the source queues"));
    json::writer w;
    w.start_object();
    w.field("queue", name);
    w.field("task_handle", *task);
    w.end_object();
    co_return json_ok(202, w.str());
}

asio::awaitable<handler_result> move_tasks(api::queues* queues, http_request_context ctx) {
    const std::string name(ctx.params.get("queue").value_or(""));
    if (!queue_table(*queues).find(name)) {
        co_return error_response(404, not_found(name));
    }
    auto source = co_await queue_arn(*queues, name);
    if (!source) {
        co_return backend_error(source.error(), "queue " + name);
    }
    auto tasks = co_await queues->list_message_move_tasks(std::move(*source), listed_tasks);
    if (!tasks) {
        co_return backend_error(tasks.error(), "move tasks of " + name);
    }
    json::writer w;
    w.start_object();
    w.field("queue", name);
    w.key("tasks");
    w.start_array();
    for (const auto& t : *tasks) {
        w.start_object();
        w.field("task_handle", t.task_handle);
        w.field("status", t.status);
        w.field("source_arn", t.source_arn);
        if (t.destination_arn) {
            w.field("destination_arn", *t.destination_arn);
        } else {
            w.null_field("destination_arn");
        }
        if (t.max_per_second) {
            w.field("max_per_second", std::int64_t{*t.max_per_second});
        } else {
            w.null_field("max_per_second");
        }
        w.field("moved", t.moved);
        w.field("to_move", t.to_move);
        if (t.failure_reason) {
            w.field("failure_reason", *t.failure_reason);
        } else {
            w.null_field("failure_reason");
        }
        w.field("started_timestamp_ms", t.started_timestamp_ms);
        w.end_object();
    }
    w.end_array();
    w.end_object();
    co_return json_ok(200, w.str());
}

}  // namespace

std::variant<redrive_request, std::string> parse_redrive_request(std::string_view body) {
    redrive_request out;
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
        return out;
    }
    json::document doc;
    if (auto err = json::parse(body, doc)) {
        return "the body is not JSON: " + *err;
    }
    if (!doc.IsObject()) {
        return std::string("the body must be a JSON object such as "
                           "{\"destination\": \"queue\", \"max_per_second\": 10}");
    }
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string_view key = json::as_view(it->name);
        if (key == "destination") {
            if (!it->value.IsString() || it->value.GetStringLength() == 0) {
                return std::string("destination must be a queue name (a non-empty string)");
            }
            out.destination = std::string(json::as_view(it->value));
        } else if (key == "max_per_second") {
            auto n = json::get_int(doc, "max_per_second");
            if (!n || *n < min_per_second || *n > max_per_second) {
                return "max_per_second must be an integer from " + std::to_string(min_per_second) +
                       " to " + std::to_string(max_per_second);
            }
            out.max_per_second = static_cast<std::int32_t>(*n);
        } else if (!it->value.IsNull()) {
            return "unknown field " + std::string(key) +
                   " (the body takes destination and max_per_second)";
        }
    }
    return out;
}

void add_queue_routes(router& routes, api::queues& queues, policy_chain chain) {
    auto bind = [q = &queues](auto fn) {
        return [q, fn](http_request_context ctx) { return fn(q, std::move(ctx)); };
    };
    routes.add(verb::get, "/v1/queues", [q = &queues, chain](http_request_context ctx) {
        return list_queues(q, chain, std::move(ctx));
    });
    routes.add(verb::get, "/v1/queues/{queue}", [q = &queues, chain](http_request_context ctx) {
        return get_queue(q, chain, std::move(ctx));
    });
    routes.add(verb::post, "/v1/queues/{queue}/redrive", [q = &queues, chain](http_request_context ctx) {
        return redrive(q, chain, std::move(ctx));
    });
    routes.add(verb::get, "/v1/queues/{queue}/move-tasks", bind(move_tasks));
}

}  // namespace sluice::gateway
