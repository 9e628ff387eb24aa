#include "gateway/server/server.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include "backend/logger.h"

namespace sluice::gateway {
namespace asio = boost::asio;

namespace {

/// Holds an exclusive lock on DATA_DIR/.lock so two processes never share a data directory.
class data_dir_lock {
public:
    explicit data_dir_lock(const std::filesystem::path& dir) {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec) {
            throw config_error("--data-dir: cannot create " + dir.string() + ": " + ec.message());
        }
        auto path = dir / ".lock";
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) {
            throw config_error("--data-dir: cannot write in " + dir.string() + ": " +
                               std::generic_category().message(errno));
        }
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            ::close(fd_);
            throw config_error("--data-dir: " + dir.string() +
                               " is in use by another sluice process");
        }
    }
    ~data_dir_lock() { ::close(fd_); }
    data_dir_lock(const data_dir_lock&) = delete;
    data_dir_lock& operator=(const data_dir_lock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace

int run_server(const config& cfg) {
    spdlog::set_level(spdlog::level::from_str(cfg.log_level));
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v");
    auto& log = named_logger("server");

    data_dir_lock lock(cfg.data_dir);
    log.info("sluice starting: data dir {}", std::filesystem::absolute(cfg.data_dir).string());

    asio::io_context io;
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int sig) {
        log.info("signal {} received, shutting down", sig);
        io.stop();
    });
    io.run();
    log.info("sluice stopped");
    return 0;
}

}  // namespace sluice::gateway
