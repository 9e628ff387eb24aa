// The file abstraction the storage engine is written against (owned by backend/io).
//
// Two implementations: posix_file_system (real files, used in production and in the real crash
// tests) and memory_file_system (tests: it models exactly what survives a power loss, so crash
// tests can drop every byte written after the last sync and check what recovery makes of it).
//
// Errors are std::error_code values in std::generic_category() (errno numbers), so callers can
// tell ENOSPC/EDQUOT (disk full) from other I/O failures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "protocol/core/result.h"

namespace sluice::backend::io {

/// An open file. All positions are absolute (pread/pwrite style): a file has no cursor, so one
/// handle can be shared by a writer and any number of readers.
///
/// Concurrency: every operation is thread-safe in itself; callers order writes to one region.
class file {
public:
    virtual ~file() = default;

    /// Reads up to buf.size() bytes at `pos`; fewer only at end of file. Retries EINTR.
    virtual result<std::size_t> read_at(std::span<std::byte> buf, std::uint64_t pos) = 0;
    /// Writes all of `data` at `pos` or fails. After a failure some prefix of `data` may have
    /// been written; the caller truncates it away.
    virtual result<void> write_at(std::span<const std::byte> data, std::uint64_t pos) = 0;
    /// Makes the file's data (and its size) durable: fdatasync.
    virtual result<void> sync() = 0;
    virtual result<void> truncate(std::uint64_t size) = 0;
    virtual result<std::uint64_t> size() = 0;
    /// The OS descriptor for sendfile, or -1 when the file is not a real one.
    virtual int native_handle() const { return -1; }
};

enum class open_mode {
    read_only,   // the file must exist
    read_write,  // the file must exist
    create,      // read-write; created empty when missing, kept as is when present
    create_new,  // read-write; truncated to empty when present
};

/// Names, directories and renames. Paths are plain strings joined with '/'.
///
/// Durability follows POSIX strictly: a new name (created file, rename, removal) is durable only
/// after sync_dir() of its parent directory; a file's bytes only after file::sync().
class file_system {
public:
    virtual ~file_system() = default;

    virtual result<std::shared_ptr<file>> open(const std::string& path, open_mode mode) = 0;
    /// Creates one directory level; succeeds when it already exists.
    virtual result<void> create_directory(const std::string& path) = 0;
    /// Removes a file or an empty directory; succeeds when it does not exist.
    virtual result<void> remove(const std::string& path) = 0;
    /// Removes a directory and everything below it; succeeds when it does not exist.
    virtual result<void> remove_all(const std::string& path) = 0;
    /// Atomically replaces `to` with `from` (rename(2)).
    virtual result<void> rename(const std::string& from, const std::string& to) = 0;
    /// Names in a directory (not "." or ".."), in no particular order.
    virtual result<std::vector<std::string>> list(const std::string& dir) = 0;
    virtual result<bool> exists(const std::string& path) = 0;
    virtual result<bool> is_directory(const std::string& path) = 0;
    /// Makes the directory's entries durable (fsync of the directory).
    virtual result<void> sync_dir(const std::string& dir) = 0;
};

/// The real file system.
std::shared_ptr<file_system> make_posix_file_system();

/// `a/b` without doubling the separator.
std::string join_path(std::string_view dir, std::string_view name);
/// The part before the last '/', or "." when there is none.
std::string parent_path(std::string_view path);

/// The longest name of one file or folder (Linux's NAME_MAX), in bytes.
inline constexpr std::size_t max_name_bytes = 255;

/// Replaces `path` with `data` so that a crash leaves either the old or the new content:
/// writes `path.tmp`, syncs it, renames it over `path` and syncs the directory.
result<void> write_file_atomic(file_system& fs, const std::string& path,
                               std::span<const std::byte> data);
/// The same through the temporary file `tmp` (in the same folder as `path`): for a name too
/// long to take the ".tmp" suffix.
result<void> write_file_atomic(file_system& fs, const std::string& path,
                               std::span<const std::byte> data, const std::string& tmp);

/// The whole content of a (small) file.
result<std::vector<std::byte>> read_whole_file(file_system& fs, const std::string& path);

/// True for ENOSPC and EDQUOT: the device or the quota is full.
bool is_disk_full(const std::error_code& ec);

/// An error_code for an errno value.
inline std::error_code errno_code(int e) {
    return {e, std::generic_category()};
}

}  // namespace sluice::backend::io
