// The state machine of one queue (owned by backend/queue): which messages of the queue's
// topic are done, available, delayed or in flight, their receive counts, FIFO groups, and what
// each change must persist. Pure: no I/O, no clock of its own (every call takes `now`, wall
// milliseconds), no locking (the queue service holds the queue's mutex around every call), so
// that tests drive it directly with manual time.
//
//   topic partition p:  [ done ......... | window ......................... | unread ...... ]
//                       0           cursor(p)                        fetch_position(p)   log end
//
//   window: the undone messages read so far, each available, delayed or in flight
//     add() ──> delayed ──(delay ends)──> available ──select()──> in flight ──remove()──> done
//                                            ^                        │
//                                            └──(visibility ends, change_visibility(0))
//
// Persisted (state_change, encoded by the service as state_records.h describes): a message
// record when a message is received, its visibility changes, or it is deleted above the
// cursor; the cursor (the first undone offset) when it moves, with tombstones for the message
// records it passes. Messages that were never received need no record: the topic holds them.
// After a restart, restore_*() put the replayed records back and the tailer re-reads the topic
// from the cursor; a message whose record says it was received comes back in flight until its
// visibility deadline, with its receive count.
//
// Receive leases: a receive may be answered before its records are stored when a stored lease
// of each partition it took from covers it (every message it took below the lease's `below`,
// its visibility timeout ending by the lease's `until`). Whoever replays the state then holds
// every message below `below` that no stored record shows deleted or in flight past `until`:
// in flight until `until`, as a receive it cannot see may have taken it. So a lost receive
// record never lets a message be in flight twice, it only makes the message wait for the
// lease's end; a delete or visibility change still waits for its records (and so for every
// record appended before them). A handle whose receive count is above the stored one names
// such a receive: the newest, so a delete with it deletes and a visibility change adopts it.
//
// Memory: bodies are held only for available and delayed messages, within the read-ahead
// budget (the tailer stops reading while wants_more() is false); a message in flight keeps its
// place and counters only, and its body is read from the topic again if it is redelivered.
// Invariants: every entry's offset is below its partition's fetch position; an entry is in
// exactly one of available_, timed_ (delayed or in flight); cursor(p) <= fetch_position(p).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/queue/message_codec.h"
#include "backend/queue/queue_config.h"
#include "backend/queue/state_records.h"

namespace sluice::backend::queue {

/// A message's place in the queue's topic.
struct message_ref {
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    auto operator<=>(const message_ref&) const = default;
};

/// Below every offset: {p, min_offset} is where partition p's entries begin in an ordered map.
inline constexpr std::int64_t min_offset = std::numeric_limits<std::int64_t>::min();

/// One record a change must persist (the service adds the queue id).
struct state_change {
    enum class kind : std::int8_t { message, tombstone, cursor, cursor_tombstone, lease,
                                    lease_tombstone };
    kind what = kind::message;
    /// cursor: the partition, and the cursor in `offset`; lease: the partition, and `below` in
    /// `offset` (`until` in visible_at_ms)
    message_ref ref;
    stored_phase phase = stored_phase::received;
    std::int32_t receive_count = 0;
    std::int64_t visible_at_ms = 0;
    std::int64_t first_receive_ms = 0;
    bool operator==(const state_change&) const = default;
};
using change_list = std::vector<state_change>;

/// A message select() handed out.
struct taken_message {
    message_ref ref;
    std::int32_t receive_count = 0;  // this receive included
    std::int64_t first_receive_ms = 0;
    /// Null when it must be read from the topic first (a redelivery).
    std::shared_ptr<const stored_message> body;
    /// Its receive count reached the redrive policy's maxReceiveCount: move it to the
    /// dead-letter queue (then dead_lettered()) instead of delivering it.
    bool dead_letter = false;
};

struct select_result {
    std::vector<taken_message> messages;
    bool over_limit = false;  // too many messages in flight: nothing taken
};

/// What a delete or visibility change found.
enum class handle_outcome : std::int8_t {
    done,          // applied (or the message was already deleted: nothing to do)
    stale,         // the message was received again since this handle (no change)
    expired,       // FIFO: the handle's visibility ended (no change)
    not_inflight,  // visibility change of a message that is not in flight
    gone,          // visibility change of a message that is deleted
    too_long,      // visibility past 12 h after the receive
};

struct queue_limits {
    std::size_t read_ahead_bytes = 64u << 20;
    std::size_t read_ahead_messages = 100000;
    std::size_t max_in_flight = 120000;
    /// How long a message waits for its dead-letter move before it may be taken again.
    std::int64_t dead_letter_hold_ms = 60000;
    /// How long a FIFO ReceiveRequestAttemptId is remembered.
    std::int64_t attempt_window_ms = 300000;
};

struct queue_counts {
    std::int64_t available = 0;
    std::int64_t in_flight = 0;
    std::int64_t delayed = 0;
    std::int64_t oldest_sent_ms = 0;  // 0: no message
};

class queue_state {
public:
    queue_state(std::int32_t partitions, queue_config config, queue_limits limits = {});

    const queue_config& config() const { return config_; }
    void set_config(queue_config c) { config_ = std::move(c); }
    std::int32_t partitions() const { return static_cast<std::int32_t>(parts_.size()); }
    /// New partitions of the topic (they start at offset 0). Never shrinks.
    void set_partitions(std::int32_t n);

    // --- replayed state ---------------------------------------------------------------------
    void restore_cursor(std::int32_t partition, std::int64_t cursor);
    /// A new queue starts reading at `offset` (nothing persisted yet: clamp() writes it).
    void start_at(std::int32_t partition, std::int64_t offset);
    void restore_message(const message_record& r);
    /// A replayed receive lease: the partition's stored lease, and the hold on the messages
    /// below it that are read from now on (see "Receive leases" above).
    void restore_lease(const lease_record& r);
    /// Fits the replayed state to what the topic holds now: the cursor into [log_start,
    /// log_end]; records at or after log_end are dropped (a crash lost the messages they named,
    /// whose offsets will be reused) and tombstoned.
    void clamp(std::int32_t partition, std::int64_t log_start, std::int64_t log_end,
               change_list& out);

    // --- reading the topic (the tailer) ---------------------------------------------------
    std::int64_t fetch_position(std::int32_t partition) const;
    /// An offset at or below where a record appended to `partition` from now on lands: the
    /// log end the tailer last saw (never below its fetch position). Where a send whose
    /// answer was lost looks for its record.
    std::int64_t append_floor(std::int32_t partition) const;
    /// The read-ahead budget has room.
    bool wants_more() const;
    /// A message read at `ref` (offsets below the fetch position are ignored: a fetch returns
    /// whole batches). Offsets skipped since the fetch position were no messages (control or
    /// aborted records). Returns true when the message is available now.
    bool add(message_ref ref, std::shared_ptr<const stored_message> m, std::int64_t now);
    /// Records below `next` that were no messages.
    void skip_to(std::int32_t partition, std::int64_t next);
    /// The topic no longer holds offsets below `log_start` (retention, DeleteRecords): drop them.
    void truncate_below(std::int32_t partition, std::int64_t log_start, change_list& out);
    void set_log_end(std::int32_t partition, std::int64_t end);

    // --- operations -------------------------------------------------------------------------
    /// Ends delays and visibility timeouts that are due, drops messages past their retention.
    /// Returns how many messages became available.
    std::size_t advance(std::int64_t now, change_list& out);
    /// Takes up to `max` available messages in flight for `visibility_ms` (FIFO: in group
    /// order, whole groups at a time; fair queues: the groups with least in flight first).
    select_result select(std::int32_t max, std::int64_t visibility_ms, std::int64_t now,
                         const std::optional<std::string>& attempt_id, change_list& out);
    /// Deletes the message a handle names (its place and receive count).
    handle_outcome remove(message_ref ref, std::int32_t receive_count, std::int64_t now,
                          change_list& out);
    handle_outcome change_visibility(message_ref ref, std::int32_t receive_count,
                                     std::int64_t timeout_ms, std::int64_t now, change_list& out);
    /// A dead-letter move of `ref` completed: the message is done here.
    void dead_lettered(message_ref ref, change_list& out);
    /// A taken message could not be delivered (its record is gone): done.
    void drop(message_ref ref, change_list& out);
    /// A message select() took could not be delivered now (its record could not be read):
    /// available again at once, its receive undone (count and first receive as before).
    /// False when it is no longer in flight under that receive.
    bool give_back(message_ref ref, std::int32_t receive_count, std::int64_t now,
                   change_list& out);
    /// Whether a message is still held by the receive that gave it `receive_count`: in flight,
    /// its visibility timeout not yet ended at `now` (a receive with `visibility_ms` 0 holds
    /// it only as long as no other receive took it).
    bool in_flight_for(message_ref ref, std::int32_t receive_count, std::int64_t visibility_ms,
                       std::int64_t now) const;
    /// Deletes every message below `ends[p]` (the log ends when the purge began).
    void purge(const std::vector<std::int64_t>& ends, change_list& out);
    /// Tombstones for every record the queue has in the state log (deleting the queue).
    void erase_all(change_list& out) const;

    // --- receive leases -----------------------------------------------------------------------
    /// Whether the stored leases cover a receive of `taken` whose visibility timeout ends at
    /// `until_ms`. When not, appends the lease records that do (a partition's `below` at least
    /// `ahead` offsets past the last message taken from it, its `until` `slack_ms` past
    /// `until_ms`; never below the stored lease) and returns false: the receive waits for its
    /// records, then lease_stored() with them.
    /// A lease record replaces the partition's earlier one: each reaches at least as far as
    /// every one appended before it, stored yet or not.
    bool covered(const std::vector<taken_message>& taken, std::int64_t until_ms,
                 std::int64_t ahead, std::int64_t slack_ms, change_list& out);
    /// Lease records (covered()'s) are stored: later receives under them need not wait.
    void lease_stored(const change_list& leases);
    /// Every receive answered so far has its records appended and no more will go unstored
    /// (a stop): each partition's lease becomes what still holds messages here (a replayed
    /// hold not yet over), or is tombstoned.
    void end_leases(std::int64_t now, change_list& out);

    /// The earliest time a delay or visibility timeout ends (max when none).
    std::int64_t next_due() const;
    queue_counts counts(std::int64_t now) const;
    /// The first undone offset of a partition (what the cursor record says once written).
    std::int64_t cursor(std::int32_t partition) const;
    /// Every undone message below `ends[p]` (move tasks: whether their work is done).
    bool any_below(const std::vector<std::int64_t>& ends) const;
    std::int64_t undone_below(const std::vector<std::int64_t>& ends) const;
    /// Takes up to `max` available messages below `ends[p]` for a move task (in flight for
    /// `hold_ms`, receive counts unchanged, nothing persisted: a crash before the move's delete
    /// just makes them available again).
    std::vector<taken_message> take_for_move(std::int32_t max, const std::vector<std::int64_t>& ends,
                                             std::int64_t hold_ms, std::int64_t now);

private:
    enum class phase : std::int8_t { available, delayed, in_flight };
    struct group_state;
    struct entry {
        phase ph = phase::available;
        std::int64_t due = 0;  // delayed, in flight: when available again
        std::int32_t receive_count = 0;
        std::int64_t first_receive_ms = 0;
        std::int64_t last_receive_ms = 0;
        std::int64_t sent_ms = 0;
        group_state* group = nullptr;
        std::shared_ptr<const stored_message> body;
        std::size_t bytes = 0;   // counted in held_bytes_ while the body is held
        bool persisted = false;  // a message record of it is in the state log
        bool held = false;       // in flight for a dead-letter or move task, not a receive
    };
    struct group_state {
        std::string id;
        std::set<message_ref> members;  // undone messages, in order
        std::int32_t in_flight = 0;
        std::optional<message_ref> ready_as;  // its key in ready_groups_
    };
    struct partition_state {
        std::int64_t fetch = 0;
        std::int64_t persisted_cursor = -1;  // -1: none written or restored
        std::int64_t log_end = 0;
        std::set<std::int64_t> done_records;  // offsets >= cursor whose record must go
        std::map<std::int64_t, message_record> pending;  // replayed, not read yet
        std::int64_t lease_below = 0;  // the stored lease (0, 0: none)
        std::int64_t lease_until = 0;
        std::int64_t written_below = 0;  // the last lease record appended
        std::int64_t written_until = 0;
        bool lease_persisted = false;  // a lease record of it is in the state log
        std::int64_t hold_below = 0;   // the replayed lease: what add() holds
        std::int64_t hold_until = 0;
    };
    struct attempt {
        std::vector<std::pair<message_ref, std::int32_t>> taken;
        std::int64_t expires_ms = 0;
    };

    using entry_map = std::map<message_ref, entry>;

    void set_phase(entry_map::iterator it, phase p, std::int64_t due);
    void unindex(entry_map::iterator it);
    void index(entry_map::iterator it);
    void release_body(entry& e);
    void refresh_group(group_state* g);
    group_state* group_of(const std::shared_ptr<const stored_message>& m);
    /// Removes a message (done): persists its deletion (`persist`) or only forgets it.
    void finish(entry_map::iterator it, bool persist, change_list& out);
    void advance_cursor(std::int32_t partition, change_list& out);
    void drop_pending_below(std::int32_t partition, std::int64_t next);
    bool expired(const entry& e, std::int64_t now) const;
    taken_message take(entry_map::iterator it, std::int64_t visibility_ms, std::int64_t now,
                       change_list& out);
    std::vector<entry_map::iterator> candidates_plain(std::int32_t max, std::int64_t now,
                                                      change_list& out);
    std::vector<entry_map::iterator> candidates_fifo(std::int32_t max, std::int64_t now,
                                                     change_list& out);
    std::vector<entry_map::iterator> candidates_fair(std::int32_t max, std::int64_t now,
                                                     change_list& out);
    std::optional<select_result> replay_attempt(const std::string& id, std::int64_t now);
    static state_change record_of(message_ref ref, const entry& e);

    queue_config config_;
    queue_limits limits_;
    std::vector<partition_state> parts_;
    entry_map entries_;
    std::set<message_ref> available_;
    std::set<std::pair<std::int64_t, message_ref>> timed_;
    std::unordered_map<std::string, std::unique_ptr<group_state>> groups_;
    std::set<std::pair<message_ref, group_state*>> ready_groups_;  // FIFO: groups that may go
    std::map<std::string, attempt> attempts_;
    std::size_t held_bytes_ = 0;
    std::size_t held_messages_ = 0;
    std::int64_t in_flight_ = 0;
    std::int64_t delayed_ = 0;
    std::int32_t next_partition_ = 0;  // where plain selection starts (rotates)
};

}  // namespace sluice::backend::queue
