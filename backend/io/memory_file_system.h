// An in-memory file system for storage tests (owned by backend/io).
//
// It keeps, for every file, the bytes as written and the bytes as last synced, and for every
// directory, the entries as they are and as of the last sync_dir(). crash_copy() returns a new
// file system holding what a power loss at that instant would leave: synced bytes of files whose
// names were made durable, and nothing else (optionally plus a random prefix of the unsynced
// tail of each file, which models a partial write-back and produces torn batches).
//
// Names follow Linux's limit: a path component longer than 255 bytes fails with ENAMETOOLONG.
//
// Fault injection: a capacity (writes past it fail with ENOSPC after writing what fits),
// failing syncs, failing writes. Counters (syncs) let tests check group commit.
//
// Concurrency: thread-safe (one mutex for the whole tree). Files keep working after their name
// is removed, as on POSIX.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "backend/io/file.h"

namespace sluice::backend::io {

class memory_file_system final : public file_system {
public:
    memory_file_system();
    ~memory_file_system() override;

    result<std::shared_ptr<file>> open(const std::string& path, open_mode mode) override;
    result<void> create_directory(const std::string& path) override;
    result<void> remove(const std::string& path) override;
    result<void> remove_all(const std::string& path) override;
    result<void> rename(const std::string& from, const std::string& to) override;
    result<std::vector<std::string>> list(const std::string& dir) override;
    result<bool> exists(const std::string& path) override;
    result<bool> is_directory(const std::string& path) override;
    result<void> sync_dir(const std::string& dir) override;

    struct crash_options {
        /// Keep a random prefix (0..all) of each file's unsynced tail, as a partial write-back.
        bool keep_random_unsynced_prefix = false;
        std::uint64_t seed = 1;
    };
    /// What a power loss now would leave, as a new file system. This one is unchanged.
    std::shared_ptr<memory_file_system> crash_copy(crash_options opts) const;
    std::shared_ptr<memory_file_system> crash_copy() const { return crash_copy(crash_options{}); }

    /// Total bytes of file content allowed; writes beyond fail with ENOSPC. nullopt = unlimited.
    void set_capacity(std::optional<std::uint64_t> bytes);
    /// Bytes of file content currently stored (live files, including unlinked but open ones).
    std::uint64_t used_bytes() const;
    /// The next n file syncs fail with `ec` (and sync nothing).
    void fail_next_syncs(int n, std::error_code ec);
    /// The next n writes fail with `ec` (and write nothing).
    void fail_next_writes(int n, std::error_code ec);
    /// Renames whose source or target path contains `needle`: after `skip` of them succeed,
    /// the next n fail with `ec`.
    void fail_renames(std::string needle, int n, std::error_code ec, int skip = 0);
    /// Number of successful file syncs so far.
    std::uint64_t sync_count() const;

    struct node;
    struct state;

private:
    std::shared_ptr<state> state_;
};

}  // namespace sluice::backend::io
