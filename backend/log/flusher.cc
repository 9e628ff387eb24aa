#include "backend/log/flusher.h"

#include "backend/log/partition_log.h"

namespace sluice::backend::log {

flusher::flusher(std::size_t threads) {
    if (threads == 0) {
        threads = 1;
    }
    for (std::size_t i = 0; i < threads; ++i) {
        threads_.emplace_back([this] { run(); });
    }
}

flusher::~flusher() {
    stop();
}

void flusher::enqueue(std::shared_ptr<partition_log> p) {
    {
        std::lock_guard lock(mu_);
        queue_.push_back(std::move(p));
    }
    cv_.notify_one();
}

void flusher::stop() {
    {
        std::lock_guard lock(mu_);
        if (stopping_ && threads_.empty()) {
            return;
        }
        stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
        if (t.joinable()) {
            t.join();
        }
    }
    threads_.clear();
    // Work queued after the threads left runs here, so that no flush waiter is stranded (a
    // partition that asked for round after round queues itself again: drained until none do).
    for (;;) {
        std::deque<std::shared_ptr<partition_log>> rest;
        {
            std::lock_guard lock(mu_);
            rest.swap(queue_);
        }
        if (rest.empty()) {
            break;
        }
        for (auto& p : rest) {
            p->run_sync();
        }
    }
}

void flusher::run() {
    while (true) {
        std::shared_ptr<partition_log> p;
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) {
                return;
            }
            p = std::move(queue_.front());
            queue_.pop_front();
        }
        p->run_sync();
    }
}

}  // namespace sluice::backend::log
