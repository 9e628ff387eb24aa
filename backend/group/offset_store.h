// Committed offsets and the records of __consumer_offsets (owned by backend/group): commits,
// fetches and deletions of one group's offsets, group deletion and offset expiry, the appends
// that make them (and group state) durable, the flushes that callers wait for, and the replay
// of the topic at start. The record layout is in group_records.h.
//
//   offset_store ──append (group's lock held)──> __consumer_offsets-<hash(group) % partitions>
//                ──flush (no lock held)────────> partition_log::flush_to (group commit fsync)
//                <─replay (at start)──────────── every partition, in offset order
//
// Lifecycle: created by the group coordinator, which calls replay() once before serving.
// Concurrency: every method that takes a group_entry requires the caller to hold the entry's
// lock, and changes that entry only; the store itself has no lock (the log's partitions have
// their own). Appends of one group therefore reach the log in the order they are applied;
// flush() waits outside every lock.
// Invariants: an entry's offsets change only after their records were appended; the group ->
// partition mapping never changes once the topic exists.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "backend/api/groups.h"
#include "backend/group/group_config.h"
#include "backend/group/group_records.h"
#include "backend/group/group_registry.h"
#include "protocol/core/result.h"

namespace sluice::backend::log {
class log_manager;
class partition_log;
}  // namespace sluice::backend::log

namespace sluice::backend::group {

/// Whether a commit follows OffsetCommit v9+ rules (KIP-848 members, GROUP_ID_NOT_FOUND).
/// Fronts that are not Kafka send version -1 and commit as the newest version does.
inline bool commits_like_v9(const api::offset_commit_request& req) {
    return req.api_version < 0 || req.api_version >= 9;
}

class offset_store {
  public:
    offset_store(log::log_manager& log, const coordinator_config& cfg,
                 const coordinator_clock& clock);

    // --- __consumer_offsets (offset_store_log.cc) ----------------------------------------
    /// Appends records of one group (its lock held). Errors: coordinator_unavailable (no
    /// offsets topic), record_too_large, storage_error.
    result<void> append(const std::string& group_id, std::vector<encoded_record> records);
    /// Appends the classic group's state record (generation and members); a failure is
    /// logged: the state is written again with its next change.
    void store_group(group_entry& e);
    /// Appends records of the entry's KIP-848 group (consumer_records.h). When an earlier
    /// write failed, the whole group is written instead (and `records` dropped); a failure is
    /// logged and makes the next write a whole one.
    void store_consumer(group_entry& e, std::vector<encoded_record> records);
    /// Adds to `out` the tombstones of the entry's group state: the classic group's record,
    /// or every record of the KIP-848 group.
    static void add_group_tombstones(const group_entry& e, std::vector<encoded_record>& out);
    /// The longest commit metadata accepted: offset.metadata.max.bytes, at most what a record
    /// holds.
    std::size_t metadata_limit() const {
        return std::min(static_cast<std::size_t>(std::max(cfg_.offset_metadata_max_bytes, 0)),
                        max_record_metadata_bytes);
    }
    /// Completes once the partition that holds `group_id` is durable up to its end.
    boost::asio::awaitable<std::error_code> flush(std::string group_id);
    /// Reads __consumer_offsets into new entries, nobody else's yet (so without their locks);
    /// adds the number of records applied to `records`.
    std::map<std::string, std::shared_ptr<group_entry>> replay(std::size_t& records);

    // --- committed offsets (offset_store.cc) ------------------------------------------------
    /// Stores an OffsetCommit whose membership the caller validated: per partition, checks
    /// the metadata size and that the partition exists, then appends and applies.
    api::offset_commit_result commit(group_entry& e, const api::offset_commit_request& req);
    /// Stores the offsets of a committed transaction (no checks).
    std::error_code commit_txn(group_entry& e, const std::vector<api::commit_topic>& topics);
    /// OffsetFetch of one group (`e` null: no such group); the require_stable check is the
    /// caller's (it calls out of the backend).
    api::offset_fetch_result fetch(const group_entry* e, const api::offset_fetch_request& req);
    /// OffsetDelete: refuses topics the group consumes and groups with members.
    api::offset_delete_result delete_offsets(group_entry& e,
                                             const std::vector<api::topic_partition_list>& topics);
    /// DeleteGroups of one group: tombstones its offsets and state; the entry is then cleared.
    std::error_code delete_group(group_entry& e);
    /// Expires the group's offsets by offsets.retention (compat: the groups'
    /// offsetExpirationCondition); clears the entry when the group itself expired. Returns
    /// how many offsets expired.
    std::size_t expire(group_entry& e);

    /// Offsets committed since start.
    std::uint64_t commits() const { return commits_.load(std::memory_order_relaxed); }

  private:
    std::shared_ptr<log::partition_log> partition_of(const std::string& group_id, bool create);
    /// Writes the groups replayed from legacy records in Kafka's layout, after tombstones for
    /// the legacy keys (one batch per group, so a crash leaves either layout, never a mix).
    void rewrite_legacy(const std::map<std::string, std::shared_ptr<group_entry>>& groups,
                        const std::map<std::string, std::vector<std::vector<std::byte>>>& keys);
    std::int64_t wall() const { return clock_.wall(); }

    log::log_manager& log_;
    const coordinator_config& cfg_;
    const coordinator_clock& clock_;
    std::atomic<std::uint64_t> commits_{0};
};

}  // namespace sluice::backend::group
