#include "gateway/core/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "gateway/core/config.h"

namespace sluice::gateway {

data_dir_lock::data_dir_lock(const std::filesystem::path& dir, const std::string& in_use) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        throw config_error("--data-dir: cannot create " + dir.string() + ": " + ec.message());
    }
    const auto path = dir / ".lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) {
        throw config_error("--data-dir: cannot write in " + dir.string() + ": " +
                           std::generic_category().message(errno));
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd_);
        throw config_error("--data-dir: " + dir.string() + " " + in_use);
    }
}

data_dir_lock::~data_dir_lock() { ::close(fd_); }

}  // namespace sluice::gateway
