#include "gateway/core/io_pool.h"

#include <exception>

#include "backend/api/logger.h"

namespace sluice::gateway {

io_pool::io_pool(unsigned threads) {
    if (threads == 0) {
        threads = std::max(1u, std::thread::hardware_concurrency());
    }
    for (unsigned i = 0; i < threads; ++i) {
        contexts_.push_back(std::make_unique<boost::asio::io_context>(1));
        guards_.emplace_back(contexts_.back()->get_executor());
    }
}

io_pool::~io_pool() {
    stop();
    join();
}

void io_pool::start() {
    for (auto& ctx : contexts_) {
        threads_.emplace_back([c = ctx.get()] {
            for (;;) {
                try {
                    c->run();
                    return;
                } catch (const std::exception& e) {
                    // A handler threw past every boundary: a bug. Log and keep serving.
                    named_logger("server").error("uncaught exception on an io thread: {}",
                                                 e.what());
                }
            }
        });
    }
}

void io_pool::release_work() { guards_.clear(); }

void io_pool::stop() {
    for (auto& ctx : contexts_) {
        ctx->stop();
    }
}

void io_pool::join() {
    for (auto& t : threads_) {
        if (t.joinable()) {
            t.join();
        }
    }
    threads_.clear();
}

boost::asio::io_context& io_pool::next() {
    return *contexts_[next_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

}  // namespace sluice::gateway
