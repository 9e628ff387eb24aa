// A bounded cache of open files (owned by backend/io), so that a broker with thousands of
// partitions and segments holds descriptors only for files in recent use.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "backend/io/file.h"

namespace sluice::backend::io {

class cached_file;

/// Keeps at most `max_open` files open, closing the least recently used first. A closed entry
/// reopens on its next use. A file handed out stays open while its user holds it (a read in
/// flight, a sendfile), even if the cache has dropped it meanwhile.
///
/// Lifecycle: created by the log manager and shared by every cached_file; outlives them.
/// Concurrency: thread-safe; one mutex, never held across an open().
class file_cache {
public:
    file_cache(std::shared_ptr<file_system> fs, std::size_t max_open);
    file_cache(const file_cache&) = delete;
    file_cache& operator=(const file_cache&) = delete;

    file_system& fs() { return *fs_; }
    const std::shared_ptr<file_system>& fs_ptr() const { return fs_; }
    std::size_t max_open() const { return max_open_; }
    /// Files the cache currently keeps open.
    std::size_t open_count() const;

private:
    friend class cached_file;
    result<std::shared_ptr<file>> acquire(cached_file& f);
    void release(cached_file& f);

    std::shared_ptr<file_system> fs_;
    std::size_t max_open_;
    mutable std::mutex mu_;
    std::list<cached_file*> lru_;  // front: most recently used
};

/// One named file opened through a file_cache on demand.
///
/// Owned by whoever names the file (a segment, an index). Concurrency: get() and close() are
/// thread-safe; set_mode() must not race with get().
class cached_file {
public:
    cached_file(std::shared_ptr<file_cache> cache, std::string path, open_mode mode);
    ~cached_file();
    cached_file(const cached_file&) = delete;
    cached_file& operator=(const cached_file&) = delete;

    /// The open file, opening it when the cache had closed it.
    result<std::shared_ptr<file>> get();
    /// Drops the cache's reference (e.g. after the file was replaced by a rename).
    void close();
    const std::string& path() const { return path_; }
    /// Mode for later opens (create for a new segment, read_only once sealed).
    void set_mode(open_mode mode) { mode_ = mode; }
    file_system& fs() { return cache_->fs(); }

private:
    friend class file_cache;
    std::shared_ptr<file_cache> cache_;
    std::string path_;
    open_mode mode_;
    // Guarded by cache_->mu_.
    std::shared_ptr<file> open_;
    std::list<cached_file*>::iterator lru_pos_;
};

}  // namespace sluice::backend::io
