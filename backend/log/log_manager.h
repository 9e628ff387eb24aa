// The native log's entry point (owned by backend/log): topics, their partitions and
// configuration, the background work (retention, compaction, interval flushes) and shutdown.
// The Kafka front and the internal-state modules (committed offsets, producer and queue state,
// in internal compacted topics) use it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/io/file.h"
#include "backend/log/log_env.h"
#include "backend/log/partition_log.h"
#include "backend/log/topic_config.h"
#include "protocol/core/ids.h"
#include "protocol/core/result.h"
#include "protocol/core/uuid.h"

namespace sluice::backend::log {

struct log_options {
    /// The data directory; created when missing (its parent must exist).
    std::string data_dir;
    /// Broker-level topic defaults (see broker_defaults()).
    topic_config defaults;
    flush_policy flush = flush_policy::always;
    /// Background fsync period under flush_policy::interval.
    std::chrono::milliseconds flush_interval{1000};
    /// How often retention runs (log.retention.check.interval.ms); 0 = never by itself.
    std::chrono::milliseconds retention_check_interval{300000};
    /// How often compacted topics are checked (log.cleaner.backoff.ms); 0 = never by itself.
    std::chrono::milliseconds compaction_check_interval{15000};
    /// How often opening a data dir logs its progress (partitions and bytes done, rate, time
    /// left) while it runs longer (log.recovery.progress.interval.ms); 0 logs every partition.
    std::chrono::milliseconds recovery_progress_interval{5000};
    /// Open descriptors kept for segment and index files (the rest reopen on use).
    std::size_t max_open_files = 2048;
    /// Threads that run fsyncs.
    std::size_t flush_threads = 2;
    /// Largest partition count of one topic. At most 100000: the folder of partition 99999 of a
    /// 249-character topic, "<name>-99999", is 255 bytes, the most a file name may have.
    std::int32_t max_partitions = 100000;
    /// Memory per compaction pass for the key map.
    std::size_t compaction_map_bytes = 64 << 20;
    /// The file system (tests pass an io::memory_file_system); the real one when null.
    std::shared_ptr<io::file_system> fs;
    /// Milliseconds since the epoch; the system clock when empty (tests pass a manual clock).
    clock_fn clock;
    /// Leader epoch stamped into appended batches.
    std::int32_t leader_epoch = 0;
};

struct topic_info {
    std::string name;
    sluice::uuid id;
    std::int32_t partitions = 0;
    topic_config config;                           // effective configuration
    std::map<std::string, std::string> overrides;  // what the topic sets itself
    bool internal = false;
};

/// Owns every topic of one data directory.
///
/// Folder `<data_dir>/`:
///   topics/<name>.topic     topic metadata (topic_store.h): the commit point of admin changes
///   <topic>-<partition>/    one partition (partition_log.h)
///   trash/                  partitions of deleted topics, being removed
///   .clean_shutdown         present only between a clean close() and the next open(): then
///                           every byte on disk was fsynced
///
///   front / internal modules
///        │ create_topic, partition(), ...
///   log_manager ──owns──> topics ──> partition_log (shared_ptr, one per partition)
///        │                                 │ request_sync
///        ├── background thread:            v
///        │   retention, compaction,     flusher threads (fsync, group commit)
///        │   interval flushes, trash
///        └── file_cache (bounded open descriptors)
///
/// Crash behaviour: a topic exists once its topic file is durable; partition folders without
/// a topic file (an interrupted create, a deleted topic) are removed at open, as are folders
/// whose partition.metadata names another topic id.
///
/// Lifecycle: open() recovers everything and starts the threads; close() (or the destructor)
/// flushes every partition, stops the threads and marks the shutdown clean.
/// Concurrency: thread-safe. Admin calls are serialised and do blocking file work on the
/// calling thread (create_topic syncs two directories); lookups (partition(), find_topic())
/// take a shared lock only.
class log_manager {
public:
    static result<std::unique_ptr<log_manager>> open(log_options opts);
    ~log_manager();
    log_manager(const log_manager&) = delete;
    log_manager& operator=(const log_manager&) = delete;

    /// Kafka's rules: 1-249 characters of [a-zA-Z0-9._-], not "." or "..".
    static bool valid_topic_name(std::string_view name);

    /// Creates a topic. Errors: invalid_topic_name (also a name that collides with an existing
    /// one once '.' and '_' are treated alike), topic_already_exists, invalid_partitions,
    /// invalid_config (message in *error_message). validate_only checks without creating.
    result<topic_info> create_topic(const std::string& name, std::int32_t partitions,
                                    const std::map<std::string, std::string>& overrides,
                                    bool validate_only = false,
                                    std::string* error_message = nullptr);
    /// Creates an internal topic (e.g. __consumer_offsets with cleanup.policy=compact), or
    /// returns it when it exists. Internal topics cannot be deleted.
    result<topic_info> create_internal_topic(const std::string& name, std::int32_t partitions,
                                             const std::map<std::string, std::string>& overrides);
    /// Deletes a topic and its data. policy_violation for internal topics.
    result<void> delete_topic(const std::string& name);
    /// Raises the partition count to new_total. invalid_partitions unless it grows.
    result<void> create_partitions(const std::string& name, std::int32_t new_total,
                                   bool validate_only = false);
    /// Replaces the topic's overrides with `overrides` (the front computes the full map for
    /// AlterConfigs / IncrementalAlterConfigs); applies them to every partition at once.
    result<topic_info> alter_config(const std::string& name,
                                    const std::map<std::string, std::string>& overrides,
                                    bool validate_only = false,
                                    std::string* error_message = nullptr);

    std::optional<topic_info> find_topic(const std::string& name) const;
    std::optional<topic_info> find_topic(const sluice::uuid& id) const;
    std::vector<topic_info> list_topics() const;
    /// nullptr when the topic or partition does not exist.
    std::shared_ptr<partition_log> partition(const std::string& topic, partition_id p) const;
    /// All partitions of a topic (empty when unknown).
    std::vector<std::shared_ptr<partition_log>> partitions(const std::string& topic) const;

    /// The broker-level topic defaults in force (static settings and dynamic broker configs).
    topic_config defaults() const;
    /// Makes `defaults` the broker-level topic defaults: every topic's effective config is
    /// recomputed (its overrides over the new defaults) and reaches its partitions at once.
    /// Nothing is written: the caller keeps the dynamic configs the defaults come from. A topic
    /// whose stored overrides no longer apply over them keeps its previous config (logged).
    void set_defaults(const topic_config& defaults);
    flush_policy policy() const { return opts_.flush; }
    const std::string& data_dir() const { return opts_.data_dir; }
    /// Files the descriptor cache keeps open.
    std::size_t open_files() const;

    /// One retention pass over every partition (the background thread calls it too).
    retention_result run_retention(std::int64_t now_ms);
    /// One compaction pass over every compacted partition that needs it.
    compaction_result run_compaction(std::int64_t now_ms);
    /// Queues an fsync of every partition with unsynced bytes (interval policy).
    void flush_all();

    /// Flushes and closes every partition, stops the threads, marks the shutdown clean.
    /// Later calls fail with log_closed. Idempotent.
    void close();

private:
    struct topic_state {
        topic_info info;
        std::shared_ptr<const topic_config> config;
        std::vector<std::shared_ptr<partition_log>> partitions;
    };

    explicit log_manager(log_options opts);
    result<void> start();
    result<void> load_topics(bool clean);
    std::string topic_file(const std::string& name) const;
    std::string partition_dir(const std::string& topic, std::int32_t p) const;
    result<void> write_topic_file(const topic_info& info);
    result<std::shared_ptr<partition_log>> open_partition(const topic_info& info,
                                                          std::shared_ptr<const topic_config> c,
                                                          std::int32_t p, bool fresh, bool clean);
    result<topic_info> create(const std::string& name, std::int32_t partitions,
                              const std::map<std::string, std::string>& overrides,
                              bool validate_only, bool internal, std::string* error_message);
    void trash_partition_dir(const std::string& dir);
    void empty_trash();
    void background_loop();
    std::vector<std::shared_ptr<topic_state>> snapshot() const;

    log_options opts_;
    std::shared_ptr<log_env> env_;

    mutable std::shared_mutex mu_;  // guards topics_, ids_ (copy-on-write topic_state) and
                                    // opts_.defaults after open
    std::map<std::string, std::shared_ptr<const topic_state>> topics_;
    std::map<sluice::uuid, std::string> ids_;
    bool closed_ = false;
    bool started_ = false;

    std::mutex admin_mu_;  // one admin change at a time

    std::mutex bg_mu_;
    std::condition_variable bg_cv_;
    bool bg_stop_ = false;
    std::thread bg_;
};

}  // namespace sluice::backend::log
