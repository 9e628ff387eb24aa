// The exclusive lock on DATA_DIR/.lock that keeps two processes off one data directory: the
// running server holds it for its lifetime, `sluice users` while it rewrites the users file.
#pragma once

#include <filesystem>
#include <string>

namespace sluice::gateway {

class data_dir_lock {
public:
    /// Creates the directory when missing and takes the lock; throws config_error (naming
    /// --data-dir) when it cannot, with `in_use` as the reason when another process holds it.
    data_dir_lock(const std::filesystem::path& dir, const std::string& in_use);
    ~data_dir_lock();
    data_dir_lock(const data_dir_lock&) = delete;
    data_dir_lock& operator=(const data_dir_lock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace sluice::gateway
