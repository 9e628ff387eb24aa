#include "gateway/core/request_budget.h"

#include <algorithm>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "protocol/core/assert.h"

namespace sluice::gateway {
namespace asio = boost::asio;

/// A parked acquire's completion: complete() posts the coroutine's resumption to its executor.
class request_budget::wakeup {
public:
    virtual ~wakeup() = default;
    virtual void complete(bool granted) = 0;
};

template <typename Handler>
class request_budget::wakeup_for final : public request_budget::wakeup {
public:
    explicit wakeup_for(Handler handler)
        : handler_(std::move(handler)),
          // Outstanding work, as any pending operation: the caller's io_context does not run
          // out of work (and return from run()) while the caller is parked here.
          work_(asio::prefer(asio::get_associated_executor(handler_),
                             asio::execution::outstanding_work.tracked)) {}

    void complete(bool granted) override {
        asio::post(work_, [h = std::move(handler_), granted]() mutable { std::move(h)(granted); });
        work_ = asio::any_io_executor();
    }

private:
    Handler handler_;
    asio::any_io_executor work_;
};

request_budget::reservation::reservation(reservation&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)), bytes_(other.bytes_) {}

request_budget::reservation& request_budget::reservation::operator=(reservation&& other) noexcept {
    if (this != &other) {
        reset();
        budget_ = std::exchange(other.budget_, nullptr);
        bytes_ = other.bytes_;
    }
    return *this;
}

void request_budget::reservation::reset() {
    if (auto* b = std::exchange(budget_, nullptr)) {
        b->release(bytes_);
    }
}

request_budget::metric_names request_budget::kafka_metric_names() {
    return metric_names{
        "sluice_kafka_queued_request_bytes",
        "Bytes of Kafka requests read but not yet answered (queued.max.request.bytes)",
        "sluice_kafka_queued_requests",
        "Kafka requests read but not yet answered (queued.max.requests)",
        "sluice_kafka_connections_waiting_for_queue",
        "Kafka connections not reading because queued.max.request.bytes or queued.max.requests "
        "is reached",
        "sluice_kafka_queue_waits_total",
        "Times a Kafka connection stopped reading until queued requests were answered"};
}

request_budget::request_budget(std::int64_t max_bytes, std::int64_t max_requests,
                               metrics_registry& metrics, const metric_names& names)
    : max_bytes_(max_bytes),
      max_requests_(max_requests),
      bytes_gauge_(metrics.get_gauge(names.bytes, names.bytes_help)),
      requests_gauge_(metrics.get_gauge(names.requests, names.requests_help)),
      waiting_gauge_(metrics.get_gauge(names.waiting, names.waiting_help)),
      waits_(metrics.get_counter(names.waits, names.waits_help)) {
    SLUICE_CHECK(max_requests_ >= 1);
}

request_budget::~request_budget() {
    // A parked caller's coroutine frame would be destroyed here, off its own thread.
    SLUICE_CHECK(parked_.empty());
}

asio::awaitable<request_budget::reservation> request_budget::acquire(std::int64_t bytes,
                                                                     const void* owner) {
    bool taken = false;
    bool closed = false;
    {
        std::lock_guard lock(mu_);
        closed = closed_;
        if (!closed && parked_.empty() && fits(bytes, -1)) {
            take(bytes, -1);
            publish();
            taken = true;
        }
    }
    if (closed) {
        co_return reservation();
    }
    if (taken) {
        co_return reservation(this, bytes);
    }
    const bool granted = co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(bool)>(
        [this, bytes, owner](auto handler) {
            park(parked{bytes, owner,
                        std::make_unique<wakeup_for<decltype(handler)>>(std::move(handler))});
        },
        asio::use_awaitable);
    co_return granted ? reservation(this, bytes) : reservation();
}

asio::awaitable<bool> request_budget::grow(reservation& r, std::int64_t extra,
                                           const void* owner) {
    SLUICE_CHECK(r.budget_ == this && extra >= 0);
    const std::int64_t held = r.bytes_;
    bool taken = false;
    bool closed = false;
    {
        std::lock_guard lock(mu_);
        closed = closed_;
        if (!closed && parked_.empty() && fits(extra, held)) {
            take(extra, held);
            publish();
            taken = true;
        }
    }
    if (closed) {
        co_return false;
    }
    if (!taken) {
        taken = co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(bool)>(
            [this, extra, owner, held](auto handler) {
                park(parked{extra, owner,
                            std::make_unique<wakeup_for<decltype(handler)>>(std::move(handler)),
                            held});
            },
            asio::use_awaitable);
    }
    if (taken) {
        r.bytes_ += extra;
    }
    co_return taken;
}

void request_budget::park(parked p) {
    wakeups now;
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            now.emplace_back(std::move(p.wake), false);
        } else if (parked_.empty() && fits(p.bytes, p.held)) {
            // Answers were written since acquire() looked: no need to wait after all.
            take(p.bytes, p.held);
            now.emplace_back(std::move(p.wake), true);
        } else {
            parked_.push_back(std::move(p));
            waits_.inc();
        }
        publish();
    }
    complete(now);
}

void request_budget::release(std::int64_t bytes) {
    wakeups granted;
    {
        std::lock_guard lock(mu_);
        SLUICE_CHECK(requests_ >= 1 && bytes_ >= bytes);
        bytes_ -= bytes;
        requests_ -= 1;
        grant_from_front(granted);
        publish();
    }
    complete(granted);
}

void request_budget::cancel(const void* owner) {
    wakeups done;
    {
        std::lock_guard lock(mu_);
        auto it = std::find_if(parked_.begin(), parked_.end(),
                               [owner](const parked& p) { return p.owner == owner; });
        if (it == parked_.end()) {
            return;
        }
        done.emplace_back(std::move(it->wake), false);
        parked_.erase(it);
        // The cancelled one may have been the large request at the front holding others back.
        grant_from_front(done);
        publish();
    }
    complete(done);
}

void request_budget::close() {
    wakeups done;
    {
        std::lock_guard lock(mu_);
        closed_ = true;
        for (auto& p : parked_) {
            done.emplace_back(std::move(p.wake), false);
        }
        parked_.clear();
        publish();
    }
    complete(done);
}

std::int64_t request_budget::queued_bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
}

std::int64_t request_budget::queued_requests() const {
    std::lock_guard lock(mu_);
    return requests_;
}

std::size_t request_budget::waiting() const {
    std::lock_guard lock(mu_);
    return parked_.size();
}

bool request_budget::fits(std::int64_t bytes, std::int64_t held) const {
    if (held < 0) {
        if (requests_ == 0) {
            return true;  // alone, even when larger than the whole byte budget
        }
        return requests_ < max_requests_ && (max_bytes_ < 0 || bytes_ + bytes <= max_bytes_);
    }
    if (requests_ == 1 && bytes_ == held) {
        return true;  // the growing reservation is all there is: it grows alone
    }
    return max_bytes_ < 0 || bytes_ + bytes <= max_bytes_;
}

void request_budget::take(std::int64_t bytes, std::int64_t held) {
    bytes_ += bytes;
    if (held < 0) {
        requests_ += 1;
    }
}

void request_budget::grant_from_front(wakeups& out) {
    while (!parked_.empty() && fits(parked_.front().bytes, parked_.front().held)) {
        take(parked_.front().bytes, parked_.front().held);
        out.emplace_back(std::move(parked_.front().wake), true);
        parked_.pop_front();
    }
}

void request_budget::publish() {
    bytes_gauge_.set(bytes_);
    requests_gauge_.set(requests_);
    waiting_gauge_.set(static_cast<std::int64_t>(parked_.size()));
}

void request_budget::complete(wakeups& w) {
    for (auto& [wake, granted] : w) {
        wake->complete(granted);
    }
}

}  // namespace sluice::gateway
