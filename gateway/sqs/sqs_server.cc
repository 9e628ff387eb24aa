#include "gateway/sqs/sqs_server.h"

#include <map>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace sluice::gateway::sqs {
namespace asio = boost::asio;
using asio::ip::tcp;
using boost::beast::http::verb;

namespace {

asio::awaitable<handler_result> serve(sqs_front* front, http_request_context ctx) {
    co_return co_await front->handle(std::move(ctx));
}

asio::awaitable<std::optional<http_response>> admit(const sqs_front* front,
                                                     http_request_context* ctx) {
    co_return co_await front->admit(ctx);
}

}  // namespace

sqs_server::sqs_server(io_pool& pool, connection_tracker& tracker, metrics_registry& metrics,
                       backend::api::queues& queues, sqs_settings settings, const endpoint& where,
                       http_limits limits, sqs_auth_config auth,
                       std::shared_ptr<auth::tls_context_holder> tls)
    : front_(queues, std::move(settings), metrics, auth),
      limits_(limits),
      requests_(metrics.get_counter("sluice_sqs_http_requests_total",
                                    "HTTP requests served by the SQS listener")),
      timing_(metrics, "sqs"),
      tls_(std::move(tls)),
      listener_(pool, tracker, metrics, listener_options{"sqs", "--sqs", ""}, where,
                [this](tcp::socket socket, std::uint64_t id) { return open(std::move(socket), id); }) {
    auto handler = [f = &front_](http_request_context ctx) { return serve(f, std::move(ctx)); };
    for (auto method : {verb::post, verb::get}) {
        router_.add(method, "/{path...}", handler);
    }
    // Before the body is read: a request its header already refuses is answered without it.
    router_.set_guard([f = &front_](http_request_context* ctx, std::string) {
        return admit(f, ctx);
    });
}

connection_session sqs_server::open(tcp::socket socket, std::uint64_t id) {
    auto conn = std::make_shared<http_connection>(
        std::move(socket), id, router_, requests_, limits_,
        [f = &front_](unsigned status, std::string_view message) {
            return f->connection_error(status, message);
        },
        nullptr, &timing_, tls_ ? tls_->current() : nullptr);
    return connection_session{conn->run(), [conn](stop_mode mode) { conn->stop(mode); }};
}

void render_queue_metrics(const backend::api::queues& queues, std::string& out) {
    const auto views = queues.view_queues();
    std::map<std::string, const backend::api::queue_view*> by_name;
    for (const auto& v : views) {
        by_name[v.name.value] = &v;
    }
    std::string messages;
    std::string age;
    std::string dlq;
    std::string waiting;
    for (const auto& v : views) {
        const auto q = metrics_registry::escape(v.name.value);
        messages += fmt::format("sluice_sqs_queue_messages{{queue=\"{}\",state=\"available\"}} {}\n", q, v.available);
        messages += fmt::format("sluice_sqs_queue_messages{{queue=\"{}\",state=\"in_flight\"}} {}\n", q, v.in_flight);
        messages += fmt::format("sluice_sqs_queue_messages{{queue=\"{}\",state=\"delayed\"}} {}\n", q, v.delayed);
        waiting += fmt::format("sluice_sqs_queue_waiting_receives{{queue=\"{}\"}} {}\n", q,
                               v.waiting_receives);
        age += fmt::format("sluice_sqs_queue_oldest_message_age_seconds{{queue=\"{}\"}} {:.3f}\n", q,
                           static_cast<double>(v.oldest_age_ms) / 1000.0);
        if (v.dead_letter_queue) {
            auto it = by_name.find(v.dead_letter_queue->value);
            const std::int64_t depth = it == by_name.end() ? 0 : it->second->available + it->second->in_flight + it->second->delayed;
            dlq += fmt::format("sluice_sqs_dead_letter_queue_messages{{queue=\"{}\",dead_letter_queue=\"{}\"}} {}\n",
                               q, metrics_registry::escape(v.dead_letter_queue->value), depth);
        }
    }
    out += "# HELP sluice_sqs_queue_messages Messages of each SQS queue by state (approximate).\n"
           "# TYPE sluice_sqs_queue_messages gauge\n";
    out += messages;
    out += "# HELP sluice_sqs_queue_oldest_message_age_seconds Age of the oldest message not yet deleted.\n"
           "# TYPE sluice_sqs_queue_oldest_message_age_seconds gauge\n";
    out += age;
    out += "# HELP sluice_sqs_queue_waiting_receives Long polls parked on each queue now.\n"
           "# TYPE sluice_sqs_queue_waiting_receives gauge\n";
    out += waiting;
    out += "# HELP sluice_sqs_dead_letter_queue_messages Messages in the dead-letter queue of each queue.\n"
           "# TYPE sluice_sqs_dead_letter_queue_messages gauge\n";
    out += dlq;
}

}  // namespace sluice::gateway::sqs
