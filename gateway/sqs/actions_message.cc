// SQS actions on messages: SendMessage(Batch), ReceiveMessage, DeleteMessage(Batch),
// ChangeMessageVisibility(Batch). The digests (md5.h) are computed here, over what the client
// sent and what it receives.
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "gateway/sqs/actions.h"
#include "gateway/sqs/md5.h"
#include "protocol/sqs/text.h"

namespace sluice::gateway::sqs {
namespace api = backend::api;
using protocol::sqs::response_writer;

namespace {

/// SendMessageBatch: the messages of one request together (SQS: 1 MiB).
constexpr std::size_t max_batch_payload = 1048576;

/// A received message's JSON besides its id, handle, body and attributes: member names, the
/// body's digest, the system attributes (the bench's receive asks for none; SDKs often all).
constexpr std::size_t received_overhead_bytes = 256;

/// One message to send, as read from a request or a batch entry; `error` when it cannot be.
struct read_message {
    api::outgoing_message message;
    std::optional<sqs_error> error;
};

std::optional<api::message_attribute> to_attribute(const std::string& name,
                                                   const protocol::sqs::attribute_value& v,
                                                   std::optional<sqs_error>& error) {
    if (v.has_list_values) {
        error = to_sqs(front_error::unsupported_operation,
                       fmt::format("Message attribute list values in '{}' are not supported.", name));
        return std::nullopt;
    }
    if (v.data_type.empty()) {
        error = to_sqs(front_error::invalid_parameter_value,
                       fmt::format("The message attribute '{}' must contain non-empty message "
                                   "attribute type.",
                                   name));
        return std::nullopt;
    }
    const bool binary = is_binary_type(v.data_type);
    const auto& value = binary ? v.binary_value : v.string_value;
    if (!value || (binary && v.string_value) || (!binary && v.binary_value)) {
        error = to_sqs(front_error::invalid_parameter_value,
                       fmt::format("The message attribute '{}' with type '{}' must use field '{}'.",
                                   name, binary ? "Binary" : "String",
                                   binary ? "Binary" : "String"));
        return std::nullopt;
    }
    return api::message_attribute{name, v.data_type, *value};
}

read_message read_one(const protocol::sqs::request_view& v) {
    read_message r;
    auto body = v.string("MessageBody");
    if (!body) {
        r.error = to_sqs(front_error::missing_parameter,
                         "The request must contain the parameter MessageBody.");
        return r;
    }
    r.message.body = std::move(*body);
    if (auto d = v.integer("DelaySeconds")) {
        r.message.delay = std::chrono::seconds(*d);
    }
    for (const auto& [name, value] : v.attribute_map("MessageAttributes", "MessageAttribute")) {
        auto a = to_attribute(name, value, r.error);
        if (!a) {
            return r;
        }
        r.message.attributes.push_back(std::move(*a));
    }
    for (const auto& [name, value] :
         v.attribute_map("MessageSystemAttributes", "MessageSystemAttribute")) {
        auto a = to_attribute(name, value, r.error);
        if (!a) {
            return r;
        }
        r.message.system_attributes.push_back(std::move(*a));
    }
    r.message.group_id = v.string("MessageGroupId");
    r.message.deduplication_id = v.string("MessageDeduplicationId");
    return r;
}

std::size_t payload_of(const api::outgoing_message& m) {
    std::size_t n = m.body.size();
    for (const auto& a : m.attributes) {
        n += a.name.size() + a.data_type.size() + a.value.size();
    }
    return n;
}

/// The digests and ids of one sent message.
void write_sent(response_writer& out, const api::outgoing_message& m, const api::sent_message& s) {
    out.string("MessageId", s.message_id);
    out.string("MD5OfMessageBody", md5_hex(m.body));
    if (!m.attributes.empty()) {
        out.string("MD5OfMessageAttributes", md5_of_attributes(m.attributes));
    }
    if (!m.system_attributes.empty()) {
        out.string("MD5OfMessageSystemAttributes", md5_of_attributes(m.system_attributes));
    }
    if (s.sequence_number) {
        out.string("SequenceNumber", *s.sequence_number);
    }
}

/// Which attributes a receive asked for.
struct attribute_filter {
    bool all = false;
    std::set<std::string> names;
    std::vector<std::string> prefixes;

    static attribute_filter of(const std::vector<std::string>& requested) {
        attribute_filter f;
        for (const auto& n : requested) {
            if (n == "All" || n == ".*") {
                f.all = true;
            } else if (n.size() > 2 && n.ends_with(".*")) {
                f.prefixes.push_back(n.substr(0, n.size() - 1));  // keep the '.'
            } else {
                f.names.insert(n);
            }
        }
        return f;
    }
    bool wants(const std::string& name) const {
        if (all || names.contains(name)) {
            return true;
        }
        for (const auto& p : prefixes) {
            if (name.starts_with(p)) {
                return true;
            }
        }
        return false;
    }
};

void write_received(response_writer& out, const api::received_message& m,
                    const attribute_filter& system, const attribute_filter& user) {
    out.begin_list_object();
    out.string("MessageId", m.message_id);
    out.string("ReceiptHandle", m.receipt_handle);
    // A Kafka producer's record may hold bytes SQS cannot carry as text: they are replaced,
    // and the digest is of what the client gets.
    const std::string body = protocol::sqs::sanitize_text(m.body);
    out.string("MD5OfBody", md5_hex(body));
    out.string("Body", body);
    std::vector<std::pair<std::string, std::string>> sys;
    auto add = [&](const char* name, std::string value) {
        if (system.wants(name)) {
            sys.emplace_back(name, std::move(value));
        }
    };
    add("SenderId", m.sender_id);
    add("SentTimestamp", std::to_string(m.sent_timestamp_ms));
    add("ApproximateReceiveCount", std::to_string(m.receive_count));
    add("ApproximateFirstReceiveTimestamp", std::to_string(m.first_receive_timestamp_ms));
    if (m.sequence_number) {
        add("SequenceNumber", *m.sequence_number);
    }
    if (m.deduplication_id) {
        add("MessageDeduplicationId", *m.deduplication_id);
    }
    if (m.group_id) {
        add("MessageGroupId", *m.group_id);
    }
    if (m.trace_header) {
        add("AWSTraceHeader", *m.trace_header);
    }
    if (m.dead_letter_source_arn) {
        add("DeadLetterQueueSourceArn", *m.dead_letter_source_arn);
    }
    if (!sys.empty()) {
        out.string_map("Attributes", "Attribute", "Name", "Value", sys);
    }
    std::vector<api::message_attribute> chosen;
    for (const auto& a : m.attributes) {
        if (user.wants(a.name)) {
            auto copy = a;
            if (!is_binary_type(copy.data_type)) {
                copy.value = protocol::sqs::sanitize_text(copy.value);
            }
            chosen.push_back(std::move(copy));
        }
    }
    if (!chosen.empty()) {
        out.string("MD5OfMessageAttributes", md5_of_attributes(chosen));
        std::vector<protocol::sqs::attribute_out> attrs;
        for (const auto& a : chosen) {
            attrs.push_back({a.name, a.data_type, a.value, is_binary_type(a.data_type)});
        }
        out.attribute_map("MessageAttributes", "MessageAttribute", attrs);
    }
    out.end_list_object();
}

}  // namespace

boost::asio::awaitable<void> send_message(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    auto m = read_one(ctx->req);
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    if (m.error) {
        ctx->error = m.error;
        co_return;
    }
    std::vector<api::outgoing_message> one;
    one.push_back(m.message);
    auto sent = co_await ctx->queues.send_messages(std::move(*q), std::move(one));
    if (!sent) {
        ctx->fail(sent.error());
        co_return;
    }
    const auto& s = sent->at(0);
    if (s.error.code) {
        ctx->fail(s.error);
        co_return;
    }
    write_sent(*ctx->out, m.message, s);
}

boost::asio::awaitable<void> send_message_batch(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    if (!q) {
        co_return;
    }
    auto entries = read_batch(*ctx, "SendMessageBatchRequestEntry");
    if (entries.empty() || ctx->failed_reading()) {
        co_return;
    }
    std::vector<read_message> messages;
    std::size_t payload = 0;
    for (const auto& e : entries) {
        messages.push_back(read_one(e.view));
        payload += payload_of(messages.back().message);
    }
    if (ctx->failed_reading()) {
        co_return;
    }
    if (payload > max_batch_payload) {
        ctx->fail(front_error::batch_too_long,
                  fmt::format("Batch requests cannot be longer than {} bytes. You have sent {} bytes.",
                              max_batch_payload, payload));
        co_return;
    }
    std::vector<api::outgoing_message> to_send;
    std::vector<std::size_t> index_of;
    for (std::size_t i = 0; i < messages.size(); ++i) {
        if (!messages[i].error) {
            to_send.push_back(messages[i].message);
            index_of.push_back(i);
        }
    }
    std::vector<api::sent_message> sent;
    if (!to_send.empty()) {
        auto r = co_await ctx->queues.send_messages(std::move(*q), std::move(to_send));
        if (!r) {
            ctx->fail(r.error());
            co_return;
        }
        sent = std::move(*r);
    }
    std::vector<std::optional<api::sent_message>> by_entry(entries.size());
    for (std::size_t k = 0; k < sent.size(); ++k) {
        by_entry[index_of[k]] = std::move(sent[k]);
    }
    auto& out = *ctx->out;
    out.begin_list("Successful", "SendMessageBatchResultEntry");
    for (std::size_t i = 0; i < entries.size(); ++i) {
        if (by_entry[i] && !by_entry[i]->error.code) {
            out.begin_list_object();
            out.string("Id", entries[i].id);
            write_sent(out, messages[i].message, *by_entry[i]);
            out.end_list_object();
        }
    }
    out.end_list();
    out.begin_list("Failed", "BatchResultErrorEntry");
    for (std::size_t i = 0; i < entries.size(); ++i) {
        if (messages[i].error) {
            write_batch_failure(out, entries[i].id, *messages[i].error);
        } else if (by_entry[i] && by_entry[i]->error.code) {
            write_batch_failure(out, entries[i].id, to_sqs(by_entry[i]->error));
        }
    }
    out.end_list();
}

boost::asio::awaitable<void> receive_message(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    api::receive_request req;
    const auto max = ctx->req.integer("MaxNumberOfMessages");
    const auto visibility = ctx->req.integer("VisibilityTimeout");
    const auto wait = ctx->req.integer("WaitTimeSeconds");
    auto system_names = ctx->req.string_list("AttributeNames", "AttributeName");
    for (auto& n : ctx->req.string_list("MessageSystemAttributeNames", "MessageSystemAttributeName")) {
        system_names.push_back(std::move(n));
    }
    const auto user_names = ctx->req.string_list("MessageAttributeNames", "MessageAttributeName");
    req.attempt_id = ctx->req.string("ReceiveRequestAttemptId");
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    req.queue = std::move(*q);
    req.max_messages = static_cast<std::int32_t>(std::clamp<std::int64_t>(max.value_or(1), -1, 1000));
    if (visibility) {
        req.visibility_timeout = std::chrono::seconds(*visibility);
    }
    if (wait) {
        req.wait = std::chrono::seconds(*wait);
    }
    auto got = co_await ctx->queues.receive_messages(std::move(req));
    if (!got) {
        ctx->fail(got.error());
        co_return;
    }
    if (got->empty()) {
        co_return;
    }
    const auto system = attribute_filter::of(system_names);
    const auto user = attribute_filter::of(user_names);
    // Each message's id, handle, digest, body (escaping aside) and the attributes' names and
    // values, plus the members' names and punctuation.
    std::size_t estimate = 0;
    for (const auto& m : *got) {
        estimate += received_overhead_bytes + m.message_id.size() + m.receipt_handle.size() +
                    m.body.size() + m.sender_id.size();
        for (const auto& a : m.attributes) {
            estimate += a.name.size() + a.data_type.size() + a.value.size() * 4 / 3 + 64;
        }
    }
    ctx->out->reserve(estimate);
    ctx->out->begin_list("Messages", "Message");
    for (const auto& m : *got) {
        write_received(*ctx->out, m, system, user);
    }
    ctx->out->end_list();
}

boost::asio::awaitable<void> delete_message(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    auto handle = ctx->required("ReceiptHandle");
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    std::vector<std::string> one{std::move(*handle)};
    auto r = co_await ctx->queues.delete_messages(std::move(*q), std::move(one));
    if (!r) {
        ctx->fail(r.error());
    } else if (r->at(0).code) {
        ctx->fail(r->at(0));
    }
}

namespace {

// The answer of a batch whose entries succeed with no payload (delete, change visibility): the
// ids of those that did under Successful, each refusal (read from the request or answered by
// the queue) under Failed.
void write_batch_outcome(protocol::sqs::response_writer& out, std::string_view success_entry,
                         const std::vector<batch_entry>& entries,
                         const std::vector<std::optional<sqs_error>>& refused,
                         const std::vector<api::backend_error>& answered) {
    out.begin_list("Successful", success_entry);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        if (!refused[i] && !answered[i].code) {
            out.begin_list_object();
            out.string("Id", entries[i].id);
            out.end_list_object();
        }
    }
    out.end_list();
    out.begin_list("Failed", "BatchResultErrorEntry");
    for (std::size_t i = 0; i < entries.size(); ++i) {
        if (refused[i]) {
            write_batch_failure(out, entries[i].id, *refused[i]);
        } else if (answered[i].code) {
            write_batch_failure(out, entries[i].id, to_sqs(answered[i]));
        }
    }
    out.end_list();
}

}  // namespace

boost::asio::awaitable<void> delete_message_batch(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    if (!q) {
        co_return;
    }
    auto entries = read_batch(*ctx, "DeleteMessageBatchRequestEntry");
    if (entries.empty() || ctx->failed_reading()) {
        co_return;
    }
    std::vector<std::string> handles;
    std::vector<std::optional<sqs_error>> errors(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
        auto h = entries[i].view.string("ReceiptHandle");
        if (!h) {
            errors[i] = to_sqs(front_error::missing_parameter,
                               "The request must contain the parameter ReceiptHandle.");
        }
        handles.push_back(h.value_or(""));
    }
    if (ctx->failed_reading()) {
        co_return;
    }
    auto r = co_await ctx->queues.delete_messages(std::move(*q), std::move(handles));
    if (!r) {
        ctx->fail(r.error());
        co_return;
    }
    write_batch_outcome(*ctx->out, "DeleteMessageBatchResultEntry", entries, errors, *r);
}

boost::asio::awaitable<void> change_message_visibility(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    auto handle = ctx->required("ReceiptHandle");
    const auto timeout = ctx->req.integer("VisibilityTimeout");
    if (!q || ctx->failed_reading()) {
        co_return;
    }
    if (!timeout) {
        ctx->fail(front_error::missing_parameter,
                  "The request must contain the parameter VisibilityTimeout.");
        co_return;
    }
    std::vector<api::visibility_change> one{{std::move(*handle), std::chrono::seconds(*timeout)}};
    auto r = co_await ctx->queues.change_visibility(std::move(*q), std::move(one));
    if (!r) {
        ctx->fail(r.error());
    } else if (r->at(0).code) {
        ctx->fail(r->at(0));
    }
}

boost::asio::awaitable<void> change_message_visibility_batch(std::shared_ptr<action_context> ctx) {
    auto q = ctx->queue_from_url();
    if (!q) {
        co_return;
    }
    auto entries = read_batch(*ctx, "ChangeMessageVisibilityBatchRequestEntry");
    if (entries.empty() || ctx->failed_reading()) {
        co_return;
    }
    std::vector<api::visibility_change> changes;
    std::vector<std::optional<sqs_error>> errors(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
        auto h = entries[i].view.string("ReceiptHandle");
        auto t = entries[i].view.integer("VisibilityTimeout");
        if (!h) {
            errors[i] = to_sqs(front_error::missing_parameter,
                               "The request must contain the parameter ReceiptHandle.");
        }
        changes.push_back({h.value_or(""), std::chrono::seconds(t.value_or(0))});
    }
    if (ctx->failed_reading()) {
        co_return;
    }
    auto r = co_await ctx->queues.change_visibility(std::move(*q), std::move(changes));
    if (!r) {
        ctx->fail(r.error());
        co_return;
    }
    write_batch_outcome(*ctx->out, "ChangeMessageVisibilityBatchResultEntry", entries, errors, *r);
}

}  // namespace sluice::gateway::sqs
