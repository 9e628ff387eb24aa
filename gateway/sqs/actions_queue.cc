// SQS actions on queues: CreateQueue, GetQueueUrl, ListQueues, DeleteQueue,
// Get/SetQueueAttributes, PurgeQueue, tags, permissions, ListDeadLetterSourceQueues; and the
// helpers every handler shares (actions.h).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "gateway/sqs/actions.h"
#include "gateway/sqs/sqs_forward.h"
#include "protocol/core/base64.h"

namespace sluice::gateway::sqs {
namespace api = backend::api;

namespace {

bool legal_topic_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

std::vector<std::pair<std::string, std::string>> as_pairs(const api::attribute_map& m) {
    return {m.begin(), m.end()};
}

api::attribute_map as_map(const std::vector<std::pair<std::string, std::string>>& v) {
    return {v.begin(), v.end()};
}

/// ListQueues and ListDeadLetterSourceQueues: MaxResults 1-1000 and an opaque NextToken (the
/// last name of the previous page); a token appears only when MaxResults was given.
struct page {
    std::vector<std::string> names;
    std::optional<std::string> next;
};

std::optional<page> paginate(action_context& ctx, std::vector<std::string> names) {
    const auto max = ctx.req.integer("MaxResults");
    auto token = ctx.req.string("NextToken");
    if (max && (*max < 1 || *max > 1000)) {
        ctx.fail(front_error::invalid_parameter_value,
                 fmt::format("Value {} for parameter MaxResults is invalid. Reason: must be "
                             "between 1 and 1000.",
                             *max));
        return std::nullopt;
    }
    page p;
    auto from = names.begin();
    if (token) {
        auto after = protocol::base64_decode(*token, protocol::base64_alphabet::url);
        if (!after) {
            ctx.fail(front_error::invalid_parameter_value, "Invalid NextToken value.");
            return std::nullopt;
        }
        from = std::upper_bound(names.begin(), names.end(), *after);
    }
    const std::size_t limit = max ? static_cast<std::size_t>(*max) : 1000;
    for (auto it = from; it != names.end() && p.names.size() < limit; ++it) {
        p.names.push_back(*it);
    }
    if (max && from + static_cast<std::ptrdiff_t>(p.names.size()) != names.end() && !p.names.empty()) {
        p.next = protocol::base64_encode(p.names.back(), protocol::base64_alphabet::url);
    }
    return p;
}

void write_urls(action_context& ctx, std::string_view member, const page& p) {
    ctx.out->begin_list(member, "QueueUrl");
    for (const auto& n : p.names) {
        ctx.out->list_string(ctx.queue_url(n));
    }
    ctx.out->end_list();
    if (p.next) {
        ctx.out->string("NextToken", *p.next);
    }
}

}  // namespace

// --- helpers --------------------------------------------------------------------------------

std::string action_context::queue_url(const std::string& name) const {
    const std::string authority = host.empty() ? std::string("localhost") : host;
    const std::string base = !settings.advertised_url.empty()
                                 ? settings.advertised_url
                                 : (tls ? "https://" : "http://") + authority;
    return base + "/" + settings.account + "/" + name;
}

std::string action_context::queue_arn(const std::string& name) const {
    return fmt::format("arn:aws:sqs:{}:{}:{}", settings.region, settings.account, name);
}

std::optional<std::string> action_context::required(std::string_view member) {
    auto v = req.string(member);
    if (!v && !req.error()) {
        fail(front_error::missing_parameter,
             fmt::format("The request must contain the parameter {}.", member));
    }
    return v;
}

bool action_context::failed_reading() {
    if (error) {
        return true;
    }
    if (const auto& e = req.error()) {
        error = to_sqs(e->code == "MissingParameter" ? front_error::missing_parameter
                                                     : front_error::invalid_parameter_value,
                       e->message);
        return true;
    }
    return false;
}

std::optional<api::queue_name> action_context::queue_from_url() {
    auto url = required("QueueUrl");
    if (!url) {
        return std::nullopt;
    }
    const std::string_view name = queue_name_in_url(*url);
    if (name.empty() || name.size() > 249 || name == "." || name == ".." ||
        !std::all_of(name.begin(), name.end(), legal_topic_char)) {
        error = to_sqs(api::backend_error{make_error_code(api::errc::queue_does_not_exist),
                                        "The specified queue does not exist."});
        return std::nullopt;
    }
    return api::queue_name(std::string(name));
}

std::vector<batch_entry> read_batch(action_context& ctx, std::string_view query_entry) {
    auto views = ctx.req.entries("Entries", query_entry);
    if (ctx.failed_reading()) {
        return {};
    }
    if (views.empty()) {
        ctx.fail(front_error::empty_batch, "There should be at least one SendMessageBatchRequestEntry "
                                           "in the request.");
        return {};
    }
    if (views.size() > 10) {
        ctx.fail(front_error::too_many_entries,
                 fmt::format("Maximum number of entries per request are 10. You have sent {}.",
                             views.size()));
        return {};
    }
    std::vector<batch_entry> out;
    std::set<std::string> ids;
    for (auto& v : views) {
        auto id = v.string("Id");
        if (!id) {
            ctx.fail(front_error::missing_parameter, "A batch entry must contain the parameter Id.");
            return {};
        }
        const bool valid = !id->empty() && id->size() <= 80 &&
                           std::all_of(id->begin(), id->end(), [](char c) {
                               return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                      (c >= '0' && c <= '9') || c == '-' || c == '_';
                           });
        if (!valid) {
            ctx.fail(front_error::invalid_batch_entry_id,
                     fmt::format("A batch entry id can only contain alphanumeric characters, "
                                 "hyphens and underscores. It can be at most 80 letters long: {}",
                                 *id));
            return {};
        }
        if (!ids.insert(*id).second) {
            ctx.fail(front_error::ids_not_distinct, fmt::format("Id {} repeated.", *id));
            return {};
        }
        out.push_back({std::move(*id), v});
    }
    return out;
}

void write_batch_failure(protocol::sqs::response_writer& out, const std::string& id,
                         const sqs_error& e) {
    out.begin_list_object();
    out.string("Id", id);
    out.boolean("SenderFault", e.sender);
    out.string("Code", e.query_code);
    out.string("Message", e.message);
    out.end_list_object();
}

// --- queues ---------------------------------------------------------------------------------

boost::asio::awaitable<void> create_queue(std::shared_ptr<action_context> ctx) {
    auto name = ctx->required("QueueName");
    auto attrs = as_map(ctx->req.string_map("Attributes", "Attribute", "Name", "Value"));
    auto tags = as_map(ctx->req.string_map("tags", "Tag", "Key", "Value"));
    if (ctx->failed_reading()) {
        co_return;
    }
    // Named, not a temporary in the co_await's arguments (g++ 12 may destroy those twice).
    api::queue_name queue(std::move(*name));
    auto made = co_await ctx->queues.create_queue(std::move(queue), std::move(attrs),
                                                  std::move(tags));
    if (!made) {
        ctx->fail(made.error());
        co_return;
    }
    ctx->out->string("QueueUrl", ctx->queue_url(made->value));
}

boost::asio::awaitable<void> get_queue_url(std::shared_ptr<action_context> ctx) {
    auto name = ctx->required("QueueName");
    if (ctx->failed_reading()) {
        co_return;
    }
    api::queue_name queue(std::move(*name));
    auto q = co_await ctx->queues.get_queue(std::move(queue));
    if (!q) {
        ctx->fail(q.error());
        co_return;
    }
    ctx->out->string("QueueUrl", ctx->queue_url(q->value));
}

boost::asio::awaitable<void> list_queues(std::shared_ptr<action_context> ctx) {
    const std::string prefix = ctx->req.string("QueueNamePrefix").value_or("");
    if (ctx->failed_reading()) {
        co_return;
    }
    auto all = co_await ctx->queues.list_queues(prefix);
    std::vector<std::string> names;
    for (auto& q : all) {
        if (ctx->chain.visible(ctx->who(), auth::acl_operation::describe,
                               auth::resource_type::topic, q.value)) {
            names.push_back(std::move(q.value));
        }
    }
    auto p = paginate(*ctx, std::move(names));
    if (!p || ctx->failed_reading()) {
        co_return;
    }
    write_urls(*ctx, "QueueUrls", *p);
}

boost::asio::awaitable<void> delete_queue(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    auto r = co_await ctx->queues.delete_queue(std::move(*q));
    if (!r) {
        ctx->fail(r.error());
    }
}

boost::asio::awaitable<void> get_queue_attributes(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    auto names = ctx->req.string_list("AttributeNames", "AttributeName");
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    auto attrs = co_await ctx->queues.get_attributes(std::move(*q), std::move(names));
    if (!attrs) {
        ctx->fail(attrs.error());
        co_return;
    }
    if (!attrs->empty()) {
        ctx->out->string_map("Attributes", "Attribute", "Name", "Value", as_pairs(*attrs));
    }
}

boost::asio::awaitable<void> set_queue_attributes(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    auto attrs = as_map(ctx->req.string_map("Attributes", "Attribute", "Name", "Value"));
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    auto r = co_await ctx->queues.set_attributes(std::move(*q), std::move(attrs));
    if (!r) {
        ctx->fail(r.error());
    }
}

boost::asio::awaitable<void> purge_queue(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    auto r = co_await ctx->queues.purge_queue(std::move(*q));
    if (!r) {
        ctx->fail(r.error());
    }
}

boost::asio::awaitable<void> tag_queue(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    auto tags = as_map(ctx->req.string_map("Tags", "Tag", "Key", "Value"));
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    auto r = co_await ctx->queues.tag_queue(std::move(*q), std::move(tags));
    if (!r) {
        ctx->fail(r.error());
    }
}

boost::asio::awaitable<void> untag_queue(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    auto keys = ctx->req.string_list("TagKeys", "TagKey");
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    auto r = co_await ctx->queues.untag_queue(std::move(*q), std::move(keys));
    if (!r) {
        ctx->fail(r.error());
    }
}

boost::asio::awaitable<void> list_queue_tags(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    auto tags = co_await ctx->queues.list_tags(std::move(*q));
    if (!tags) {
        ctx->fail(tags.error());
        co_return;
    }
    if (!tags->empty()) {
        ctx->out->string_map("Tags", "Tag", "Key", "Value", as_pairs(*tags));
    }
}

boost::asio::awaitable<void> add_permission(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    auto label = ctx->required("Label");
    auto accounts = ctx->req.string_list("AWSAccountIds", "AWSAccountId");
    auto actions = ctx->req.string_list("Actions", "ActionName");
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    auto r = co_await ctx->queues.add_permission(std::move(*q), std::move(*label),
                                                 std::move(accounts), std::move(actions));
    if (!r) {
        ctx->fail(r.error());
    }
}

boost::asio::awaitable<void> remove_permission(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    auto label = ctx->required("Label");
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    auto r = co_await ctx->queues.remove_permission(std::move(*q), std::move(*label));
    if (!r) {
        ctx->fail(r.error());
    }
}

boost::asio::awaitable<void> list_dead_letter_source_queues(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    auto sources = co_await ctx->queues.dead_letter_source_queues(std::move(*q));
    if (!sources) {
        ctx->fail(sources.error());
        co_return;
    }
    // Only the source queues the caller may DESCRIBE, as ListQueues lists only those.
    std::vector<std::string> names;
    for (auto& s : *sources) {
        if (ctx->chain.visible(ctx->who(), auth::acl_operation::describe,
                               auth::resource_type::topic, s.value)) {
            names.push_back(std::move(s.value));
        }
    }
    auto p = paginate(*ctx, std::move(names));
    if (!p || ctx->failed_reading()) {
        co_return;
    }
    write_urls(*ctx, "queueUrls", *p);
}

}  // namespace sluice::gateway::sqs
