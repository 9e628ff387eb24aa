#include "gateway/sqs/sqs_front.h"

#include <chrono>
#include <exception>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/field.hpp>
#include <fmt/format.h>

#include "gateway/core/busy_time.h"
#include "gateway/sqs/logger.h"
#include "protocol/core/uuid.h"

namespace sluice::gateway::sqs {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using protocol::sqs::wire;

namespace {

constexpr std::string_view target_prefix = "AmazonSQS.";

std::string header(const http_request& req, std::string_view name) {
    auto it = req.find(boost::beast::string_view(name.data(), name.size()));
    if (it == req.end()) {
        return {};
    }
    return std::string(it->value().data(), it->value().size());
}

}  // namespace

sqs_front::sqs_front(backend::api::queues& queues, sqs_settings settings, metrics_registry& metrics,
                     sqs_auth_config auth)
    : queues_(queues),
      settings_(std::move(settings)),
      metrics_(metrics),
      errors_(metrics.get_counter("sluice_sqs_errors_total", "SQS requests answered with an error")),
      unknown_requests_(metrics.get_counter("sluice_sqs_requests_total", "SQS requests by action",
                                            {{"action", "unknown"}})),
      auth_(auth, metrics),
      chain_(auth.chain) {
    actions_ = {
        {"CreateQueue", {create_queue, true}},
        {"GetQueueUrl", {get_queue_url, true}},
        {"ListQueues", {list_queues, true}},
        {"DeleteQueue", {delete_queue, false}},
        {"GetQueueAttributes", {get_queue_attributes, true}},
        {"SetQueueAttributes", {set_queue_attributes, false}},
        {"PurgeQueue", {purge_queue, false}},
        {"TagQueue", {tag_queue, false}},
        {"UntagQueue", {untag_queue, false}},
        {"ListQueueTags", {list_queue_tags, true}},
        {"AddPermission", {add_permission, false}},
        {"RemovePermission", {remove_permission, false}},
        {"ListDeadLetterSourceQueues", {list_dead_letter_source_queues, true}},
        {"SendMessage", {send_message, true}},
        {"SendMessageBatch", {send_message_batch, true}},
        {"ReceiveMessage", {receive_message, true}},
        {"DeleteMessage", {delete_message, false}},
        {"DeleteMessageBatch", {delete_message_batch, true}},
        {"ChangeMessageVisibility", {change_message_visibility, false}},
        {"ChangeMessageVisibilityBatch", {change_message_visibility_batch, true}},
        {"StartMessageMoveTask", {start_message_move_task, true}},
        {"ListMessageMoveTasks", {list_message_move_tasks, true}},
        {"CancelMessageMoveTask", {cancel_message_move_task, true}},
    };
    for (const auto& [name, entry] : actions_) {
        request_counters_[name] = &metrics.get_counter("sluice_sqs_requests_total",
                                                       "SQS requests by action", {{"action", name}});
        action_seconds_[name] = &metrics.get_histogram(
            "sluice_sqs_action_seconds",
            "Time an SQS action took, by action (ReceiveMessage includes its long poll)",
            {{"action", name}});
    }
}

namespace {

/// Which client quota an action counts against: sends as produce, receives as fetch.
std::optional<auth::quota_kind> quota_kind_of(const std::string& action) {
    if (action == "SendMessage" || action == "SendMessageBatch") {
        return auth::quota_kind::producer_byte_rate;
    }
    if (action == "ReceiveMessage") {
        return auth::quota_kind::consumer_byte_rate;
    }
    return std::nullopt;
}

}  // namespace

bool sqs_front::action_checks(const std::string& action, const protocol::sqs::request_view& view,
                              acl_checks& checks, acl_checks& writes) const {
    const std::string_view parameter = sqs_queue_parameter(action);
    std::string queue;
    if (!parameter.empty()) {
        auto value = view.string(parameter);
        if (!value || value->empty()) {
            return false;  // the handler answers MissingParameter
        }
        queue = sqs_queue_of(parameter, *value);
    }
    checks = sqs_action_checks(action, queue);
    // Where the action makes sluice write later on the principal's behalf (`writes`): checked
    // now, apart from the action's own checks (which CREATE on the cluster may stand in for).
    if (action == "StartMessageMoveTask") {
        checks = sqs_move_task_checks(queue, view.string("DestinationArn"),
                                      dead_letter_sources(queue));
    }
    if (action == "CancelMessageMoveTask") {
        // What starting the task the handle names needed; an unknown handle keeps the
        // cluster's ALTER (its answer is then the handler's ResourceNotFound).
        auto handle = view.string("TaskHandle");
        if (!handle || handle->empty()) {
            return false;  // the handler answers MissingParameter
        }
        if (auto task = queues_.find_message_move_task(*handle)) {
            const auto source = sqs_queue_of("SourceArn", task->source_arn);
            checks = sqs_move_task_checks(source, task->destination_arn,
                                          dead_letter_sources(source));
        }
    }
    if (action == "CreateQueue" || action == "SetQueueAttributes") {
        // A RedrivePolicy: the receives that exceed maxReceiveCount write to its target.
        const auto attributes = view.string_map("Attributes", "Attribute", "Name", "Value");
        for (const auto& [name, value] : attributes) {
            if (name == "RedrivePolicy") {
                for (auto& c : sqs_redrive_policy_checks(value)) {
                    writes.push_back(std::move(c));
                }
            }
        }
    }
    return true;
}

std::vector<std::string> sqs_front::dead_letter_sources(std::string_view queue) const {
    std::vector<std::string> out;
    for (auto& v : queues_.view_queues()) {
        if (v.dead_letter_queue && v.dead_letter_queue->value == queue) {
            out.push_back(std::move(v.name.value));
        }
    }
    return out;
}

counter& sqs_front::requests_for(const std::string& action) {
    auto it = request_counters_.find(action);
    return it == request_counters_.end() ? unknown_requests_ : *it->second;
}

http_response sqs_front::render_error(wire w, const std::string& action, const sqs_error& e,
                                      const std::string& request_id) const {
    errors_.inc();
    sqs_log().debug("{} answered {} {}: {}", action.empty() ? "request" : action, e.status,
                    e.query_code, e.message);
    http_response res = make_response(
        {e.status, protocol::sqs::response_writer::content_type(w),
         protocol::sqs::error_body(w, e.json_type, e.query_code, e.sender, e.message, request_id)});
    res.set("x-amzn-RequestId", request_id);
    res.set("x-amzn-query-error", fmt::format("{};{}", e.query_code, e.sender ? "Sender" : "Receiver"));
    return res;
}

http_response sqs_front::connection_error(unsigned status, std::string_view message) const {
    if (status == 503) {
        // No room for the body in time (http.request.body.budget.bytes): AWS's throttling
        // shape, which the SDKs retry with back-off.
        const std::string code = "ServiceUnavailable";
        http_response res = make_response(
            {status, protocol::sqs::response_writer::content_type(wire::query),
             protocol::sqs::error_body(wire::query, code, code, false, message,
                                       uuid::random().to_string())});
        res.set("x-amzn-query-error", code + ";Receiver");
        return res;
    }
    const std::string code = status == 413 ? "RequestEntityTooLarge" : "InvalidRequest";
    http_response res = make_response(
        {status, protocol::sqs::response_writer::content_type(wire::query),
         protocol::sqs::error_body(wire::query, code, code, true, message, uuid::random().to_string())});
    res.set("x-amzn-query-error", code + ";Sender");
    return res;
}

boost::asio::awaitable<std::optional<http_response>> sqs_front::admit(
    http_request_context* ctx) const {
    const wire w = header(ctx->req, "X-Amz-Target").empty() ? wire::query : wire::json;
    if (!settings_.origins.admits(ctx->req, ctx->tls)) {
        // A page on another origin (a form post needs no CORS preflight).
        const std::string origin = header(ctx->req, "Origin");
        sqs_log().info("request from {} refused: origin {} is not allowed",
                       ctx->peer.address().to_string(), origin);
        sqs_error e = access_denied("Origin " + origin +
                                    " is not allowed: pages may call this endpoint only from "
                                    "an origin listed in http.allowed.origins");
        e.status = 403;
        co_return render_error(w, "", e, uuid::random().to_string());
    }
    auto refusal = co_await auth_.check_header(*ctx);
    if (!refusal) {
        co_return std::nullopt;
    }
    co_return render_error(w, "", *refusal, uuid::random().to_string());
}

boost::asio::awaitable<handler_result> sqs_front::handle(http_request_context ctx) {
    const std::string request_id = uuid::random().to_string();
    const std::string target = header(ctx.req, "X-Amz-Target");
    const wire w = target.empty() ? wire::query : wire::json;
    if (forwarder_) {
        forward_outcome routed = co_await forwarder_->route(ctx);
        if (routed.answer) {
            co_return std::move(*routed.answer);
        }
        if (!routed.unavailable.empty()) {
            http_response res = render_error(
                w, "",
                to_sqs(backend::api::backend_error(
                    make_error_code(backend::api::errc::backend_unavailable),
                    routed.unavailable)),
                request_id);
            if (routed.not_owner) {
                res.set(not_owner_header, "1");
            }
            co_return res;
        }
    }
    {
        std::string principal;
        auto refusal = co_await auth_.check(ctx, &principal);
        if (refusal) {
            co_return render_error(w, "", *refusal, request_id);
        }
        ctx.principal = std::move(principal);
    }

    std::string action;
    rapidjson::Document doc;
    protocol::sqs::form_fields fields;
    std::optional<protocol::sqs::request_view> view;
    if (w == wire::json) {
        if (!target.starts_with(target_prefix)) {
            co_return render_error(w, "", to_sqs(front_error::invalid_action,
                                                 "The target " + target + " is not an SQS action."),
                                   request_id);
        }
        action = target.substr(target_prefix.size());
        const std::string& body = ctx.req.body();
        const std::string_view text = body.empty() ? std::string_view("{}") : std::string_view(body);
        if (!protocol::parse_json(doc, text) || !doc.IsObject()) {
            co_return render_error(
                w, action,
                to_sqs(front_error::malformed_json,
                       doc.HasParseError()
                           ? fmt::format("The body is not valid JSON: {} at offset {}.",
                                         rapidjson::GetParseError_En(doc.GetParseError()),
                                         doc.GetErrorOffset())
                           : std::string("The body must be a JSON object.")),
                request_id);
        }
        view = protocol::sqs::request_view::of_json(doc);
    } else {
        auto form = parse_query(ctx.req.body());
        if (!form) {
            co_return render_error(w, "", to_sqs(front_error::malformed_query,
                                                 "The form body has a malformed percent-escape."),
                                   request_id);
        }
        for (const auto& [k, v] : form->items()) {
            fields[k] = v;
        }
        for (const auto& [k, v] : ctx.query.items()) {
            fields.emplace(k, v);  // the body wins over the query string
        }
        auto it = fields.find("Action");
        if (it == fields.end() || it->second.empty()) {
            co_return render_error(w, "", to_sqs(front_error::missing_action,
                                                 "The request must contain the parameter Action."),
                                   request_id);
        }
        action = it->second;
        view = protocol::sqs::request_view::of_query(fields);
    }

    requests_for(action).inc();
    auto entry = actions_.find(action);
    if (entry == actions_.end()) {
        co_return render_error(w, action,
                               to_sqs(front_error::invalid_action,
                                      fmt::format("The action {} is not valid for this endpoint.",
                                                  action)),
                               request_id);
    }
    // The policy chain: the action's ACL checks (all or nothing), then its client quotas: a
    // principal already over its quota is refused; a send counts its body now.
    const auto quota = quota_kind_of(action);
    decision policy;
    if (chain_.authorizing() || chain_.metering()) {
        acl_checks checks;
        acl_checks writes;
        std::vector<access> accesses;
        if (chain_.authorizing() && action_checks(action, *view, checks, writes)) {
            accesses = accesses_of(checks);
            if (action == "CreateQueue" && !accesses.empty()) {
                accesses.front().alternative = also_passes::cluster;  // Kafka's CREATE rule
            }
            for (auto& a : accesses_of(writes)) {
                accesses.push_back(a);
            }
        }
        request_facts facts{.who = {.front = policy_front::sqs,
                                    .principal = ctx.principal,
                                    .peer = ctx.peer},
                            .action = action,
                            .accesses = accesses,
                            .all_or_nothing = true,
                            .byte_quota = quota,
                            .bytes = quota == auth::quota_kind::producer_byte_rate
                                         ? static_cast<double>(ctx.req.body().size())
                                         : 0.0,
                            .request_time = true};
        policy = chain_.decide(facts);
        if (policy.first_denied != nullptr) {
            const access& denied = *policy.first_denied;
            co_return render_error(
                w, action,
                access_denied("User: " + ctx.principal.substr(ctx.principal.find(':') + 1) +
                              " is not authorized to perform: " + action + ". " +
                              denial_message(denied)),
                request_id);
        }
        if (policy.delay.count() > 0) {
            co_return render_error(
                w, action,
                request_throttled(fmt::format("Rate of requests exceeds the {} quota; retry in "
                                              "{} ms.",
                                              auth::to_string(*policy.throttled_by),
                                              policy.delay.count())),
                request_id);
        }
    }
    // request_percentage: the action's io-thread time (a long poll's wait is not counted).
    const bool metered = policy.meter_request_time;
    const requester who{.front = policy_front::sqs, .principal = ctx.principal};
    auto actx = std::make_shared<action_context>(queues_, settings_, *view);
    actx->chain = chain_;
    actx->principal = ctx.principal;
    actx->peer_host = authorizer_host(ctx.peer);
    actx->wire = w;
    actx->action = action;
    actx->host = header(ctx.req, "Host");
    actx->tls = ctx.tls;
    actx->out = std::make_unique<protocol::sqs::response_writer>(w, action, entry->second.has_result);
    const auto started = std::chrono::steady_clock::now();
    try {
        if (metered) {
            auto busy = std::make_shared<busy_clock>();
            auto ex = co_await asio::this_coro::executor;
            co_await asio::co_spawn(metered_executor(ex, busy), entry->second.handler(actx),
                                    asio::use_awaitable);
            chain_.record_request_time(who, busy->total());
        } else {
            co_await entry->second.handler(actx);
        }
    } catch (const std::exception& e) {
        sqs_log().error("{} failed: {}", action, e.what());
        actx->error = sqs_error{500, "InternalFailure", "InternalFailure", false,
                                "The request could not be processed."};
    }
    action_seconds_.at(action)->observe(std::chrono::steady_clock::now() - started);
    if (!actx->error && actx->req.error()) {
        const auto& pe = *actx->req.error();
        actx->error = to_sqs(pe.code == "MissingParameter" ? front_error::missing_parameter
                                                           : front_error::invalid_parameter_value,
                             pe.message);
    }
    if (actx->error) {
        co_return render_error(w, action, *actx->error, request_id);
    }
    http_response res =
        make_response({200, protocol::sqs::response_writer::content_type(w), actx->out->finish(request_id)});
    if (quota == auth::quota_kind::consumer_byte_rate) {
        chain_.record(who, *quota, static_cast<double>(res.body().size()));
    }
    res.set("x-amzn-RequestId", request_id);
    co_return res;
}

}  // namespace sluice::gateway::sqs
