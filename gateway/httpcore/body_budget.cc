#include "gateway/httpcore/body_budget.h"

#include <limits>
#include <memory>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

namespace sluice::gateway {
namespace asio = boost::asio;

namespace {

request_budget::metric_names http_metric_names() {
    return request_budget::metric_names{
        "sluice_http_request_body_bytes",
        "Bytes of HTTP and SQS request bodies being read or held until answered "
        "(http.request.body.budget.bytes)",
        "sluice_http_requests_holding_body",
        "HTTP and SQS requests holding body bytes of http.request.body.budget.bytes",
        "sluice_http_requests_waiting_for_body_budget",
        "HTTP and SQS requests not reading their body because http.request.body.budget.bytes "
        "is reached",
        "sluice_http_body_budget_waits_total",
        "Times an HTTP or SQS request waited for room in http.request.body.budget.bytes"};
}

}  // namespace

body_budget::body_budget(std::int64_t max_bytes, std::chrono::milliseconds max_wait,
                         metrics_registry& metrics)
    : max_bytes_(max_bytes),
      budget_(max_bytes, std::numeric_limits<std::int64_t>::max(), metrics, http_metric_names()),
      max_wait_(max_wait),
      refused_(metrics.get_counter(
          "sluice_http_body_budget_refused_total",
          "HTTP and SQS requests answered 503 because http.request.body.budget.bytes had no "
          "room within http.request.body.budget.wait.ms")) {}

asio::awaitable<bool> body_budget::reserve(reservation& r, std::int64_t bytes,
                                           const void* owner) {
    if (r && r.bytes() >= bytes) {
        co_return true;
    }
    // The wait's deadline cancels the parked call. `done` keeps a deadline whose handler was
    // already queued when the wait ended from cancelling a later wait of the same owner (both
    // run on this executor).
    auto done = std::make_shared<bool>(false);
    asio::steady_timer deadline(co_await asio::this_coro::executor, max_wait_);
    deadline.async_wait([this, owner, done](const boost::system::error_code& ec) {
        if (!ec && !*done) {
            budget_.cancel(owner);
        }
    });
    bool granted = false;
    if (!r) {
        r = co_await budget_.acquire(bytes, owner);
        granted = static_cast<bool>(r);
    } else {
        granted = co_await budget_.grow(r, bytes - r.bytes(), owner);
    }
    *done = true;
    deadline.cancel();
    co_return granted;
}

}  // namespace sluice::gateway
