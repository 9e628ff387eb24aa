// SQS message move tasks: StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask.
#include "gateway/sqs/actions.h"

namespace sluice::gateway::sqs {
namespace api = backend::api;

boost::asio::awaitable<void> start_message_move_task(std::shared_ptr<action_context> ctx) {
    auto source = ctx->required("SourceArn");
    auto destination = ctx->req.string("DestinationArn");
    auto rate = ctx->req.integer("MaxNumberOfMessagesPerSecond");
    if (ctx->failed_reading()) {
        co_return;
    }
    std::optional<std::int32_t> per_second;
    if (rate) {
        per_second = static_cast<std::int32_t>(std::clamp<std::int64_t>(*rate, -1, 100000));
    }
    auto task = co_await ctx->queues.start_message_move_task(std::move(*source), std::move(destination),
                                                             per_second);
    if (!task) {
        ctx->fail(task.error());
        co_return;
    }
    ctx->out->string("TaskHandle", *task);
}

boost::asio::awaitable<void> list_message_move_tasks(std::shared_ptr<action_context> ctx) {
    auto source = ctx->required("SourceArn");
    auto max = ctx->req.integer("MaxResults");
    if (ctx->failed_reading()) {
        co_return;
    }
    const auto n = static_cast<std::int32_t>(std::clamp<std::int64_t>(max.value_or(1), -1, 1000));
    auto tasks = co_await ctx->queues.list_message_move_tasks(std::move(*source), n);
    if (!tasks) {
        ctx->fail(tasks.error());
        co_return;
    }
    auto& out = *ctx->out;
    out.begin_list("Results", "ListMessageMoveTasksResultEntry");
    for (const auto& t : *tasks) {
        out.begin_list_object();
        out.string("TaskHandle", t.task_handle);
        out.string("Status", t.status);
        out.string("SourceArn", t.source_arn);
        if (t.destination_arn) {
            out.string("DestinationArn", *t.destination_arn);
        }
        if (t.max_per_second) {
            out.integer("MaxNumberOfMessagesPerSecond", *t.max_per_second);
        }
        out.integer("ApproximateNumberOfMessagesMoved", t.moved);
        out.integer("ApproximateNumberOfMessagesToMove", t.to_move);
        if (t.failure_reason) {
            out.string("FailureReason", *t.failure_reason);
        }
        out.integer("StartedTimestamp", t.started_timestamp_ms);
        out.end_list_object();
    }
    out.end_list();
}

boost::asio::awaitable<void> cancel_message_move_task(std::shared_ptr<action_context> ctx) {
    auto handle = ctx->required("TaskHandle");
    if (ctx->failed_reading()) {
        co_return;
    }
    auto moved = co_await ctx->queues.cancel_message_move_task(std::move(*handle));
    if (!moved) {
        ctx->fail(moved.error());
        co_return;
    }
    ctx->out->integer("ApproximateNumberOfMessagesMoved", *moved);
}

}  // namespace sluice::gateway::sqs
