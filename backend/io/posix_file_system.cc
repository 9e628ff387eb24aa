// The real file system: POSIX calls with EINTR retries, errors as errno codes.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>

#include "backend/io/file.h"
#include "backend/io/sync_latency.h"

namespace sluice::backend::io {
namespace {

std::error_code last_error() {
    return errno_code(errno);
}

class posix_file final : public file {
public:
    explicit posix_file(int fd) : fd_(fd) {}
    ~posix_file() override { ::close(fd_); }
    posix_file(const posix_file&) = delete;
    posix_file& operator=(const posix_file&) = delete;

    result<std::size_t> read_at(std::span<std::byte> buf, std::uint64_t pos) override {
        std::size_t done = 0;
        while (done < buf.size()) {
            ssize_t n =
                ::pread(fd_, buf.data() + done, buf.size() - done, static_cast<off_t>(pos + done));
            if (n < 0) {
                if (errno == EINTR) {
                    continue;
                }
                return fail(last_error());
            }
            if (n == 0) {
                break;
            }
            done += static_cast<std::size_t>(n);
        }
        return done;
    }

    result<void> write_at(std::span<const std::byte> data, std::uint64_t pos) override {
        std::size_t done = 0;
        while (done < data.size()) {
            ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done,
                                 static_cast<off_t>(pos + done));
            if (n < 0) {
                if (errno == EINTR) {
                    continue;
                }
                return fail(last_error());
            }
            done += static_cast<std::size_t>(n);
        }
        return {};
    }

    result<void> sync() override {
        const auto start = std::chrono::steady_clock::now();
        while (::fdatasync(fd_) != 0) {
            if (errno != EINTR) {
                return fail(last_error());
            }
        }
        record_sync(sync_kind::file, std::chrono::steady_clock::now() - start);
        return {};
    }

    result<void> truncate(std::uint64_t size) override {
        while (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
            if (errno != EINTR) {
                return fail(last_error());
            }
        }
        return {};
    }

    result<std::uint64_t> size() override {
        struct stat st {};
        if (::fstat(fd_, &st) != 0) {
            return fail(last_error());
        }
        return static_cast<std::uint64_t>(st.st_size);
    }

    int native_handle() const override { return fd_; }

private:
    int fd_;
};

class posix_file_system final : public file_system {
public:
    result<std::shared_ptr<file>> open(const std::string& path, open_mode mode) override {
        int flags = O_CLOEXEC;
        switch (mode) {
            case open_mode::read_only:
                flags |= O_RDONLY;
                break;
            case open_mode::read_write:
                flags |= O_RDWR;
                break;
            case open_mode::create:
                flags |= O_RDWR | O_CREAT;
                break;
            case open_mode::create_new:
                flags |= O_RDWR | O_CREAT | O_TRUNC;
                break;
        }
        int fd;
        do {
            fd = ::open(path.c_str(), flags, 0600);
        } while (fd < 0 && errno == EINTR);
        if (fd < 0) {
            return fail(last_error());
        }
        return std::shared_ptr<file>(std::make_shared<posix_file>(fd));
    }

    result<void> create_directory(const std::string& path) override {
        if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
            return fail(last_error());
        }
        return {};
    }

    result<void> remove(const std::string& path) override {
        if (::unlink(path.c_str()) == 0) {
            return {};
        }
        if (errno == ENOENT) {
            return {};
        }
        if (errno == EISDIR || errno == EPERM) {
            if (::rmdir(path.c_str()) == 0 || errno == ENOENT) {
                return {};
            }
        }
        return fail(last_error());
    }

    result<void> remove_all(const std::string& path) override {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
        if (ec) {
            return fail(ec);
        }
        return {};
    }

    result<void> rename(const std::string& from, const std::string& to) override {
        if (::rename(from.c_str(), to.c_str()) != 0) {
            return fail(last_error());
        }
        return {};
    }

    result<std::vector<std::string>> list(const std::string& dir) override {
        DIR* d = ::opendir(dir.c_str());
        if (d == nullptr) {
            return fail(last_error());
        }
        std::vector<std::string> out;
        errno = 0;
        while (struct dirent* e = ::readdir(d)) {
            std::string_view name(e->d_name);
            if (name != "." && name != "..") {
                out.emplace_back(name);
            }
        }
        int err = errno;
        ::closedir(d);
        if (err != 0) {
            return fail(errno_code(err));
        }
        return out;
    }

    result<bool> exists(const std::string& path) override {
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0) {
            return true;
        }
        if (errno == ENOENT || errno == ENOTDIR) {
            return false;
        }
        return fail(last_error());
    }

    result<bool> is_directory(const std::string& path) override {
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0) {
            return S_ISDIR(st.st_mode);
        }
        if (errno == ENOENT || errno == ENOTDIR) {
            return false;
        }
        return fail(last_error());
    }

    result<void> sync_dir(const std::string& dir) override {
        int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            return fail(last_error());
        }
        int rc;
        const auto start = std::chrono::steady_clock::now();
        do {
            rc = ::fsync(fd);
        } while (rc != 0 && errno == EINTR);
        std::error_code ec = rc != 0 ? last_error() : std::error_code{};
        if (!ec) {
            record_sync(sync_kind::directory, std::chrono::steady_clock::now() - start);
        }
        ::close(fd);
        if (ec) {
            return fail(ec);
        }
        return {};
    }
};

}  // namespace

std::shared_ptr<file_system> make_posix_file_system() {
    return std::make_shared<posix_file_system>();
}

}  // namespace sluice::backend::io
