// The fsync threads of the native log (owned by backend/log).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::backend::log {

class partition_log;

/// A small pool of threads that run partition_log::run_sync(): fsyncs, sealed-index writes and
/// directory syncs, so that no io thread ever blocks on the disk.
///
/// Group commit: a partition is queued at most once; while its fsync runs, later appends and
/// flush_to() calls pile up and are all served by the next round (one fsync for many waiters).
/// Several threads let fsyncs of different partitions overlap (the file system batches them
/// into one journal commit).
///
/// Lifecycle: created by log_manager::open, stopped by log_manager::close after every partition
/// was closed. Concurrency: enqueue() is thread-safe.
class flusher {
public:
    explicit flusher(std::size_t threads);
    ~flusher();
    flusher(const flusher&) = delete;
    flusher& operator=(const flusher&) = delete;

    /// Runs p->run_sync() on a pool thread soon. The caller de-duplicates (partition_log does).
    void enqueue(std::shared_ptr<partition_log> p);
    /// Finishes queued work and joins the threads.
    void stop();

private:
    void run();

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<partition_log>> queue_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace sluice::backend::log
