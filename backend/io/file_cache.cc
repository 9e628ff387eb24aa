#include "backend/io/file_cache.h"

#include <vector>

namespace sluice::backend::io {

file_cache::file_cache(std::shared_ptr<file_system> fs, std::size_t max_open)
    : fs_(std::move(fs)), max_open_(max_open == 0 ? 1 : max_open) {}

std::size_t file_cache::open_count() const {
    std::lock_guard lock(mu_);
    return lru_.size();
}

result<std::shared_ptr<file>> file_cache::acquire(cached_file& f) {
    {
        std::lock_guard lock(mu_);
        if (f.open_) {
            if (f.lru_pos_ != lru_.begin()) {
                lru_.splice(lru_.begin(), lru_, f.lru_pos_);
            }
            return f.open_;
        }
    }
    auto opened = fs_->open(f.path_, f.mode_);
    if (!opened) {
        return opened;
    }
    std::vector<std::shared_ptr<file>> evicted;  // closed after the lock is released
    std::lock_guard lock(mu_);
    if (f.open_) {
        return f.open_;  // another thread opened it meanwhile; ours closes on return
    }
    f.open_ = std::move(*opened);
    lru_.push_front(&f);
    f.lru_pos_ = lru_.begin();
    while (lru_.size() > max_open_) {
        cached_file* victim = lru_.back();
        lru_.pop_back();
        evicted.push_back(std::move(victim->open_));
        victim->open_.reset();
    }
    return f.open_;
}

void file_cache::release(cached_file& f) {
    std::shared_ptr<file> closing;
    std::lock_guard lock(mu_);
    if (f.open_) {
        closing = std::move(f.open_);
        f.open_.reset();
        lru_.erase(f.lru_pos_);
    }
}

cached_file::cached_file(std::shared_ptr<file_cache> cache, std::string path, open_mode mode)
    : cache_(std::move(cache)), path_(std::move(path)), mode_(mode) {}

cached_file::~cached_file() {
    cache_->release(*this);
}

result<std::shared_ptr<file>> cached_file::get() {
    return cache_->acquire(*this);
}

void cached_file::close() {
    cache_->release(*this);
}

}  // namespace sluice::backend::io
