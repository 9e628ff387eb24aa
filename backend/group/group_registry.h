// One consumer group's state under its own lock, and the registry that finds it (owned by
// backend/group). The group coordinator works on one group at a time, holding that group's
// lock only: a rebalance of one group never waits for another group.
//
//   group_registry ──short lock: find, create, erase──> group_entry (its own mutex)
//                                                         ├── classic_group | consumer_group
//                                                         ├── committed offsets
//                                                         ├── timer_queue: its timeouts
//                                                         └── answers queued under the lock
//   locked_group (the entry, locked) ── release: tell the ticker when the group's next
//                                        timeout is new or earlier, erase the entry if it holds
//                                        nothing, unlock, then run the queued answers
//
// Lifecycle: the coordinator owns the registry. An entry is created by the first call that
// needs one (or by the replay of __consumer_offsets, install()) and erased when it holds
// nothing at the end of a call: no group state and no committed offsets (a deleted or expired
// group, or a call that found no group). An erased entry is marked `removed`; whoever locks it
// after that looks the group up again.
//
// Concurrency: the registry's mutex guards only its map. It is never held while taking a
// group's lock; a new entry is locked before it is published. Lock order: a group's mutex,
// then the registry's (create, erase) or the ticker's (release); nobody holds two groups'
// mutexes at once. Answers (the callbacks of parked and
// callback-style calls) are queued under the group's lock and run after it is released, by the
// releasing thread, with no lock of the coordinator held.
//
// Invariant: an entry reachable from the map and not locked holds a classic or a consumer group
// (committed offsets always come with one: a group that only commits offsets is an Empty
// classic group without protocol, as Kafka's "simple" groups are).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/group/classic_group.h"
#include "backend/group/consumer_group.h"
#include "backend/group/group_records.h"
#include "backend/group/timer_queue.h"

namespace sluice::backend::group {

class ticker;

/// Which protocol a group speaks: the classic one (JoinGroup...) or KIP-848's (consumer).
enum class group_kind : std::int8_t { classic = 0, consumer = 1 };

/// Committed offsets of one group: topic -> partition -> offset.
using group_offsets = std::map<std::string, std::map<std::int32_t, committed_offset>>;

struct group_entry {
    explicit group_entry(std::string group_id) : id(std::move(group_id)) {}
    group_entry(const group_entry&) = delete;
    group_entry& operator=(const group_entry&) = delete;

    const std::string id;
    std::mutex mu;

    // Everything below is guarded by mu.
    bool removed = false;  // erased from the registry
    group_kind kind = group_kind::classic;
    std::unique_ptr<classic_group> classic;
    std::unique_ptr<consumer_group> consumer;
    group_offsets offsets;
    timer_queue timers;                          // keys are unique within the group only
    std::optional<std::int64_t> noted_deadline;  // the ticker's: never after the next timeout
    std::vector<std::function<void()>> answers;  // run once mu is released

    /// Neither group state nor committed offsets: erased when released.
    bool vacant() const { return !classic && !consumer && offsets.empty(); }
    /// Forgets the group's state and offsets (it is deleted or expired): erased when released.
    void clear() {
        classic.reset();
        consumer.reset();
        offsets.clear();
        timers.clear();
    }

    /// A callback that, called under mu, queues `done` to run once mu is released. It refers
    /// to this entry: it must be called (if ever) while the entry is alive and locked, which
    /// holds for the callbacks classic members park in it.
    template <typename Result>
    std::function<void(Result)> defer(std::function<void(Result)> done) {
        return [this, done = std::move(done)](Result r) {
            answers.push_back([done, r = std::move(r)]() mutable { done(std::move(r)); });
        };
    }
};

class group_registry;

/// A group entry whose mutex this object holds (see the file comment for what release does).
class locked_group {
  public:
    locked_group() = default;
    locked_group(locked_group&& other) noexcept
        : registry_(other.registry_), entry_(std::move(other.entry_)) {}
    locked_group& operator=(locked_group&&) = delete;
    ~locked_group() { release(); }

    explicit operator bool() const { return entry_ != nullptr; }
    group_entry& operator*() const { return *entry_; }
    group_entry* operator->() const { return entry_.get(); }

    /// Releases early (idempotent).
    void release();

  private:
    friend class group_registry;
    /// Takes over `e`, whose mutex the caller has locked.
    locked_group(group_registry* registry, std::shared_ptr<group_entry> e)
        : registry_(registry), entry_(std::move(e)) {}

    group_registry* registry_ = nullptr;
    std::shared_ptr<group_entry> entry_;
};

class group_registry {
  public:
    /// `timeouts` learns each group's next deadline when the group is released.
    explicit group_registry(ticker& timeouts) : ticker_(timeouts) {}

    /// The group's entry, locked; empty when there is none.
    locked_group find(const std::string& group_id);
    /// The group's entry, locked, created empty (vacant) when there is none.
    locked_group find_or_create(const std::string& group_id);
    /// The ids of every group now (a snapshot: groups come and go meanwhile).
    std::vector<std::string> ids() const;
    std::size_t size() const;

    /// Publishes the groups replayed at start, replacing whatever the registry held (nothing:
    /// no call reaches the registry before the coordinator is loaded).
    void install(std::map<std::string, std::shared_ptr<group_entry>> groups);

  private:
    friend class locked_group;
    locked_group lookup(const std::string& group_id, bool create);
    /// The end of a call on `e` (its mutex held): erases it when vacant, else tells the ticker
    /// its next deadline when that is new or earlier than the one the ticker has.
    void released(group_entry& e);
    void erase(group_entry& e);

    ticker& ticker_;
    mutable std::mutex mu_;
    std::map<std::string, std::shared_ptr<group_entry>> groups_;  // guarded by mu_
};

}  // namespace sluice::backend::group
