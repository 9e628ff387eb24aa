// The sparse offset index and time index of one segment (owned by backend/log).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/io/file_cache.h"
#include "protocol/core/bytes.h"
#include "protocol/core/ids.h"
#include "protocol/core/result.h"

namespace sluice::backend::log {

/// The header both index files start with. A header with `sealed` set is written only after the
/// segment's .log was fsynced, together with every entry, through a temporary file renamed into
/// place: a sealed index describes a complete, durable segment of exactly `log_size` bytes.
///
/// Layout (40 bytes, big-endian):
///    0 magic           4 bytes  "SLOI" (offset index) or "SLTI" (time index)
///    4 version         u16      1
///    6 flags           u16      bit 0: sealed
///    8 log_size        u32      size of the .log when sealed (0 otherwise)
///   12 next_delta      u32      next offset after the segment - base offset (sealed)
///   16 max_timestamp   i64      largest batch max_timestamp in the segment (sealed; -1 none)
///   24 max_ts_delta    u32      offset of that batch - base offset (sealed)
///   28 entries_crc     u32      CRC-32C of all entry bytes (files written whole; else 0)
///   32 crc             u32      CRC-32C of bytes 0..31
///   36 reserved        u32      0
struct index_header {
    bool sealed = false;
    std::uint32_t log_size = 0;
    std::uint32_t next_delta = 0;
    std::int64_t max_timestamp = -1;
    std::uint32_t max_ts_delta = 0;
    std::uint32_t entries_crc = 0;  // filled in when the file is written
};

constexpr std::size_t index_header_size = 40;

enum class index_kind {
    /// Entries {u32 offset - base, u32 position in the .log} (8 bytes), one per
    /// index.interval.bytes of batches: key = absolute offset of a batch's first offset,
    /// value = the batch's byte position. Keys and values strictly increase.
    offset,
    /// Entries {i64 timestamp, u32 offset - base} (12 bytes), added with an offset index entry
    /// when the segment's largest timestamp grew since the last time entry: key = the largest
    /// batch max_timestamp so far, value = first offset of the batch that holds it. Every batch
    /// before the index point has a max_timestamp <= key. Keys and values strictly increase.
    time,
};

struct index_entry {
    std::int64_t key = 0;
    std::int64_t value = 0;
    bool operator==(const index_entry&) const = default;
};

/// One index file plus the entries not yet written to it.
///
/// Entries live in two parts: a prefix in the file (read with pread on lookup, never held in
/// memory, so an idle sealed segment costs no index memory) and a tail in memory (entries of the
/// active segment that cover bytes not yet fsynced). persist_below() moves tail entries that
/// point at synced bytes into the file (without fsync), so an entry in an index file always
/// points at bytes that were durable before the entry was written. write_sealed() rewrites
/// the whole file with a sealed header.
///
/// Recovery: load() accepts a sealed file after a header, size and last-entry check and
/// verifies the rest lazily: the first lookup reads every entry once and checks the entries'
/// CRC, order and bounds; a file failing that is ignored from then on (lookups start at the
/// segment's first byte) and damaged() tells the owner to rebuild it. An unsealed file is read
/// at load and cut at the first entry out of order or out of bounds.
///
/// Concurrency: thread-safe (own mutex); lookups from readers race with appends and persists.
class sparse_index {
public:
    sparse_index(index_kind kind, offset base, std::shared_ptr<io::file_cache> cache,
                 std::string path);

    index_kind kind() const { return kind_; }
    const std::string& path() const { return file_.path(); }
    static std::size_t entry_size(index_kind k) { return k == index_kind::offset ? 8 : 12; }

    struct loaded {
        bool found = false;  // a file with a valid header existed
        index_header header;
        std::size_t entries = 0;  // entries kept
        bool damaged = false;     // entries were cut or the file was unreadable
    };
    /// Reads the file at open. `log_size` bounds offset index positions.
    result<loaded> load(std::uint64_t log_size);

    /// Adds an entry to the memory tail. Keys must not decrease (offsets strictly increase).
    void append(index_entry e);
    /// The last entry, if any.
    std::optional<index_entry> last() const;
    std::size_t size() const;
    /// The last entry with key <= `key` (or < `key` when `strict`).
    result<std::optional<index_entry>> floor(std::int64_t key, bool strict) const;

    /// Writes tail entries with value < `value_limit` to the file (no fsync).
    result<void> persist_below(std::int64_t value_limit);
    /// Replaces the file with all entries and a sealed header (tmp + fsync + rename); the
    /// caller syncs the directory. The memory tail is empty afterwards.
    result<void> write_sealed(const index_header& h);
    /// Writes all entries with an unsealed header, fsynced (clean shutdown of the active segment).
    result<void> write_unsealed_all();
    /// Drops entries with value >= `value_limit` (after truncating the .log).
    result<void> truncate_values_from(std::int64_t value_limit);
    /// Forgets every entry and removes the file.
    result<void> reset();
    /// Closes the cached descriptor (the file was renamed or removed).
    void close_file() { file_.close(); }
    /// All entries, file part included (tests and index rewrites).
    result<std::vector<index_entry>> all() const;
    /// Bytes the memory tail holds.
    std::size_t memory_bytes() const;
    /// The file failed its lazy check; lookups ignore it until replace_all().
    bool damaged() const;
    /// Replaces every entry (an index rebuilt from the segment); the file is rewritten by the
    /// next write_sealed().
    void replace_all(std::vector<index_entry> entries);

private:
    void encode(const index_entry& e, std::byte* out) const;
    index_entry decode(const std::byte* in) const;
    result<std::vector<index_entry>> read_file_entries(std::size_t first, std::size_t count) const;
    result<std::vector<index_entry>> all_locked() const;
    void verify_locked() const;
    result<void> write_whole(const index_header& h, const std::vector<index_entry>& entries,
                             bool sync);

    const index_kind kind_;
    const offset base_;
    mutable io::cached_file file_;
    mutable std::mutex mu_;
    // Mutable: a lookup's lazy check (const) may find the file damaged and drop it.
    mutable std::size_t file_count_ = 0;            // entries in the file
    mutable std::optional<index_entry> file_last_;  // the file's last entry
    std::vector<index_entry> tail_;                 // entries after the file's
    mutable bool verified_ = true;                  // the file part passed its full check
    mutable bool damaged_ = false;
    std::uint32_t expected_crc_ = 0;
    std::uint64_t log_size_ = 0;
};

/// Encodes/decodes the header (magic chosen by kind).
void encode_index_header(index_kind kind, const index_header& h, std::byte* out);
result<index_header> decode_index_header(index_kind kind, protocol::bytes_view in);

}  // namespace sluice::backend::log
