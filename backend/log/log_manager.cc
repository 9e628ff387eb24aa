#include "backend/log/log_manager.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "backend/log/errc.h"
#include "backend/log/flusher.h"
#include "backend/log/topic_store.h"
#include "backend/logger.h"

namespace sluice::backend::log {

namespace {

constexpr const char* clean_marker = ".clean_shutdown";
constexpr const char* topic_ext = ".topic";

// "<topic>-<partition>" -> (topic, partition).
std::optional<std::pair<std::string, std::int32_t>> parse_partition_dir(std::string_view name) {
    auto dash = name.rfind('-');
    if (dash == std::string_view::npos || dash == 0 || dash + 1 == name.size()) {
        return std::nullopt;
    }
    std::int32_t p = 0;
    auto digits = name.substr(dash + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), p);
    if (ec != std::errc{} || end != digits.data() + digits.size() || p < 0) {
        return std::nullopt;
    }
    return std::make_pair(std::string(name.substr(0, dash)), p);
}

// compat: Kafka refuses topics whose names differ only in '.' versus '_' (metric names clash).
std::string collision_key(std::string_view name) {
    std::string out(name);
    std::replace(out.begin(), out.end(), '.', '_');
    return out;
}

std::string metadata_text(const uuid& id) {
    return "version: 0\ntopic_id: " + id.to_base64() + "\n";
}

std::int64_t system_now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

log_manager::log_manager(log_options opts) : opts_(std::move(opts)) {}

bool log_manager::valid_topic_name(std::string_view name) {
    if (name.empty() || name.size() > 249 || name == "." || name == "..") {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

result<std::unique_ptr<log_manager>> log_manager::open(log_options opts) {
    if (!opts.fs) {
        opts.fs = io::make_posix_file_system();
    }
    if (!opts.clock) {
        opts.clock = system_now_ms;
    }
    std::unique_ptr<log_manager> m(new log_manager(std::move(opts)));
    if (auto r = m->start(); !r) {
        m->close();
        return fail(r.error());
    }
    m->started_ = true;
    return m;
}

std::string log_manager::topic_file(const std::string& name) const {
    return io::join_path(io::join_path(opts_.data_dir, "topics"), name + topic_ext);
}

std::string log_manager::partition_dir(const std::string& topic, std::int32_t p) const {
    return io::join_path(opts_.data_dir, topic + "-" + std::to_string(p));
}

result<void> log_manager::start() {
    auto& fs = *opts_.fs;
    auto env = std::make_shared<log_env>();
    env->files = std::make_shared<io::file_cache>(opts_.fs, opts_.max_open_files);
    env->fsyncs = std::make_shared<flusher>(opts_.flush_threads);
    env->policy = opts_.flush;
    env->clock = opts_.clock;
    env->leader_epoch = opts_.leader_epoch;
    env->compaction_map_bytes = opts_.compaction_map_bytes;
    env_ = env;

    auto io_fail = [](const std::error_code& ec, const std::string& what) {
        storage_log().error("log: {} failed: {}", what, ec.message());
        return fail(io::is_disk_full(ec) ? errc::disk_full : errc::storage_error);
    };
    auto existed = fs.exists(opts_.data_dir);
    if (!existed) {
        return io_fail(existed.error(), "checking " + opts_.data_dir);
    }
    if (auto r = fs.create_directory(opts_.data_dir); !r) {
        return io_fail(r.error(), "creating " + opts_.data_dir);
    }
    if (!*existed) {
        if (auto r = fs.sync_dir(io::parent_path(opts_.data_dir)); !r) {
            return io_fail(r.error(), "syncing the parent of " + opts_.data_dir);
        }
    }
    const std::string marker = io::join_path(opts_.data_dir, clean_marker);
    auto clean = fs.exists(marker);
    if (!clean) {
        return io_fail(clean.error(), "checking " + marker);
    }
    if (*clean) {
        // Gone (durably) before anything is written, so a crash from here on is unclean.
        if (auto r = fs.remove(marker); !r) {
            return io_fail(r.error(), "removing " + marker);
        }
        if (auto r = fs.sync_dir(opts_.data_dir); !r) {
            return io_fail(r.error(), "syncing " + opts_.data_dir);
        }
    }
    // A data dir without a topics folder has never held a log: it is new, not recovered from
    // an unclean shutdown.
    auto had_topics = fs.is_directory(io::join_path(opts_.data_dir, "topics"));
    if (!had_topics) {
        return io_fail(had_topics.error(), "checking " + opts_.data_dir);
    }
    for (const char* sub : {"topics", "trash"}) {
        if (auto r = fs.create_directory(io::join_path(opts_.data_dir, sub)); !r) {
            return io_fail(r.error(), std::string("creating ") + sub);
        }
    }
    if (auto r = fs.sync_dir(opts_.data_dir); !r) {
        return io_fail(r.error(), "syncing " + opts_.data_dir);
    }
    empty_trash();
    if (auto r = load_topics(*clean); !r) {
        return r;
    }
    storage_log().info("log: opened {} ({}, flush policy {})", opts_.data_dir,
                       !*had_topics ? std::string("new data dir")
                                    : fmt::format("{} topics, {} shutdown", topics_.size(),
                                                  *clean ? "clean" : "unclean"),
                       opts_.flush == flush_policy::always     ? "always"
                       : opts_.flush == flush_policy::interval ? "interval"
                                                               : "os");
    bool background = (opts_.flush == flush_policy::interval && opts_.flush_interval.count() > 0) ||
                      opts_.retention_check_interval.count() > 0 ||
                      opts_.compaction_check_interval.count() > 0;
    if (background) {
        bg_ = std::thread([this] { background_loop(); });
    }
    return {};
}

result<void> log_manager::load_topics(bool clean) {
    auto& fs = *opts_.fs;
    const std::string topics_dir = io::join_path(opts_.data_dir, "topics");
    auto names = fs.list(topics_dir);
    if (!names) {
        return fail(errc::storage_error);
    }
    std::map<std::string, topic_record> records;
    for (const auto& n : *names) {
        if (n.ends_with(".tmp")) {
            (void)fs.remove(io::join_path(topics_dir, n));
            continue;
        }
        if (!n.ends_with(topic_ext)) {
            continue;
        }
        auto bytes = io::read_whole_file(fs, io::join_path(topics_dir, n));
        if (!bytes) {
            storage_log().error("log: cannot read topic file {}: {}", n, bytes.error().message());
            return fail(errc::storage_error);
        }
        auto rec = decode_topic_record(*bytes);
        if (!rec || rec->name + topic_ext != n) {
            storage_log().error("log: topic file {} is damaged; refusing to start", n);
            return fail(errc::storage_error);
        }
        records.emplace(rec->name, std::move(*rec));
    }
    // Partition folders that belong to no topic are leftovers of an interrupted create or
    // delete: they go to the trash.
    auto entries = fs.list(opts_.data_dir);
    if (!entries) {
        return fail(errc::storage_error);
    }
    for (const auto& e : *entries) {
        auto parsed = parse_partition_dir(e);
        if (!parsed) {
            continue;
        }
        auto it = records.find(parsed->first);
        if (it == records.end() || parsed->second >= it->second.partitions) {
            storage_log().warn("log: removing folder {} of no existing partition", e);
            trash_partition_dir(io::join_path(opts_.data_dir, e));
        }
    }
    // Opening a partition recovers it (after an unclean shutdown its active segment is
    // scanned); a large data dir takes a while, so progress is logged as it goes.
    using clock = std::chrono::steady_clock;
    std::int64_t total_partitions = 0;
    for (const auto& [name, rec] : records) {
        total_partitions += rec.partitions;
    }
    const auto started = clock::now();
    auto last_report = started;
    std::int64_t partitions_done = 0;
    std::int64_t bytes_done = 0;
    auto report = [&](bool last) {
        const double secs = std::chrono::duration<double>(clock::now() - started).count();
        const double mib = static_cast<double>(bytes_done) / (1 << 20);
        if (last) {
            storage_log().info("log: opened {} partitions ({:.1f} MiB) in {:.1f} s",
                               partitions_done, mib, secs);
            return;
        }
        const double left = partitions_done == 0 ? 0
                                                 : secs * static_cast<double>(total_partitions -
                                                                              partitions_done) /
                                                       static_cast<double>(partitions_done);
        storage_log().info(
            "log: {} recovery: {}/{} partitions, {:.1f} MiB, {:.1f} MiB/s, about {:.0f} s left",
            clean ? "clean" : "unclean", partitions_done, total_partitions, mib,
            secs > 0 ? mib / secs : 0.0, left);
    };
    for (auto& [name, rec] : records) {
        std::string error;
        auto cfg = topic_config::from_overrides(rec.overrides, opts_.defaults, &error);
        if (!cfg) {
            storage_log().error("log: topic {} has a bad stored config ({}); using defaults", name,
                                error);
            cfg = opts_.defaults;
        }
        auto state = std::make_shared<topic_state>();
        state->info = {rec.name, rec.id, rec.partitions, *cfg, rec.overrides, rec.internal};
        state->config = std::make_shared<const topic_config>(*cfg);
        for (std::int32_t p = 0; p < rec.partitions; ++p) {
            auto log = open_partition(state->info, state->config, p, false, clean);
            if (!log) {
                return fail(log.error());
            }
            ++partitions_done;
            bytes_done += (*log)->size_bytes();
            state->partitions.push_back(*log);
            const auto now = clock::now();
            if (now - last_report >= opts_.recovery_progress_interval &&
                partitions_done < total_partitions) {
                report(false);
                last_report = now;
            }
        }
        ids_[rec.id] = name;
        topics_[name] = std::move(state);
    }
    if (total_partitions > 0 &&
        (clock::now() - started >= opts_.recovery_progress_interval || !clean)) {
        report(true);
    }
    return {};
}

result<std::shared_ptr<partition_log>> log_manager::open_partition(
    const topic_info& info, std::shared_ptr<const topic_config> cfg, std::int32_t p, bool fresh,
    bool clean) {
    auto& fs = *opts_.fs;
    const std::string dir = partition_dir(info.name, p);
    const std::string meta_path = io::join_path(dir, "partition.metadata");
    const std::string meta = metadata_text(info.id);
    auto exists = fs.is_directory(dir);
    if (!exists) {
        return fail(errc::storage_error);
    }
    if (*exists && !fresh) {
        auto bytes = io::read_whole_file(fs, meta_path);
        std::string_view text = bytes ? protocol::as_chars(*bytes) : std::string_view{};
        // Only a complete file naming another id marks a folder of an earlier topic with the
        // same name; a torn or missing file (it is not fsynced) is simply written again.
        if (bytes && text != meta && text.size() == meta.size() &&
            text.starts_with("version: 0\ntopic_id: ") && text.back() == '\n') {
            storage_log().warn("log: {} belongs to another topic id; removing it", dir);
            trash_partition_dir(dir);
            *exists = false;
        }
    }
    if (*exists && fresh) {
        trash_partition_dir(dir);
        *exists = false;
    }
    if (!*exists) {
        if (auto r = fs.create_directory(dir); !r) {
            return fail(io::is_disk_full(r.error()) ? errc::disk_full : errc::storage_error);
        }
    }
    auto current = io::read_whole_file(fs, meta_path);
    if (!current || protocol::as_chars(*current) != meta) {
        // Not synced here: the folder's first fsync round (before any acknowledged append)
        // syncs it, and a lost file is rewritten at the next open.
        auto f = fs.open(meta_path, io::open_mode::create_new);
        if (!f || !(*f)->write_at(protocol::as_bytes(meta), 0)) {
            return fail(errc::storage_error);
        }
    }
    return partition_log::open(env_, dir, info.name, partition_id(p), std::move(cfg),
                               clean && *exists);
}

void log_manager::trash_partition_dir(const std::string& dir) {
    auto& fs = *opts_.fs;
    std::string dest =
        io::join_path(io::join_path(opts_.data_dir, "trash"), uuid::random().to_string());
    if (auto r = fs.rename(dir, dest); !r) {
        storage_log().warn("log: could not move {} to the trash: {}", dir, r.error().message());
        (void)fs.remove_all(dir);
        return;
    }
    // Not synced: a folder that comes back after a crash has no topic and is trashed again.
    if (!bg_.joinable()) {
        empty_trash();
    } else {
        bg_cv_.notify_one();
    }
}

void log_manager::empty_trash() {
    auto& fs = *opts_.fs;
    const std::string trash = io::join_path(opts_.data_dir, "trash");
    auto names = fs.list(trash);
    if (!names) {
        return;
    }
    for (const auto& n : *names) {
        if (auto r = fs.remove_all(io::join_path(trash, n)); !r) {
            storage_log().warn("log: could not remove {}/{}: {}", trash, n, r.error().message());
        }
    }
}

result<void> log_manager::write_topic_file(const topic_info& info) {
    topic_record rec{info.name, info.id, info.partitions, info.internal, info.overrides};
    std::string text = encode_topic_record(rec);
    // A name of up to 249 characters makes "<name>.topic" of up to 255 bytes, the most one
    // file name may have, and "<name>-<partition>" too (partitions < 100000): the temporary
    // file cannot be "<name>.topic.tmp", so it has a short name of its own (load_topics removes
    // one a crash left behind).
    const std::string tmp = io::join_path(io::join_path(opts_.data_dir, "topics"),
                                          uuid::random().to_string() + ".tmp");
    auto r = io::write_file_atomic(*opts_.fs, topic_file(info.name), protocol::as_bytes(text),
                                   tmp);
    if (!r) {
        storage_log().error("log: writing the topic file of {} failed: {}", info.name,
                            r.error().message());
        return fail(io::is_disk_full(r.error()) ? errc::disk_full : errc::storage_error);
    }
    return {};
}

result<topic_info> log_manager::create_topic(const std::string& name, std::int32_t partitions,
                                             const std::map<std::string, std::string>& overrides,
                                             bool validate_only, std::string* error_message) {
    return create(name, partitions, overrides, validate_only, false, error_message);
}

result<topic_info> log_manager::create_internal_topic(
    const std::string& name, std::int32_t partitions,
    const std::map<std::string, std::string>& overrides) {
    if (auto existing = find_topic(name)) {
        if (!existing->internal) {
            return fail(errc::policy_violation);
        }
        return *existing;
    }
    return create(name, partitions, overrides, false, true, nullptr);
}

result<topic_info> log_manager::create(const std::string& name, std::int32_t partitions,
                                       const std::map<std::string, std::string>& overrides,
                                       bool validate_only, bool internal,
                                       std::string* error_message) {
    if (!valid_topic_name(name)) {
        if (error_message != nullptr) {
            *error_message = "topic names are 1-249 characters of [a-zA-Z0-9._-], not . or ..";
        }
        return fail(errc::invalid_topic_name);
    }
    if (partitions < 1 || partitions > opts_.max_partitions) {
        if (error_message != nullptr) {
            *error_message =
                "partitions must be in [1, " + std::to_string(opts_.max_partitions) + "]";
        }
        return fail(errc::invalid_partitions);
    }
    for (const auto& [k, v] : overrides) {
        if (k.find_first_of("=\n") != std::string::npos || v.find('\n') != std::string::npos) {
            if (error_message != nullptr) {
                *error_message = "invalid config entry " + k;
            }
            return fail(errc::invalid_config);
        }
    }
    std::lock_guard admin(admin_mu_);
    // Under the admin lock: set_defaults() cannot change the defaults in between.
    auto cfg = topic_config::from_overrides(overrides, defaults(), error_message);
    if (!cfg) {
        return fail(cfg.error());
    }
    {
        std::shared_lock lock(mu_);
        if (closed_) {
            return fail(errc::log_closed);
        }
        if (topics_.count(name) != 0) {
            return fail(errc::topic_already_exists);
        }
        for (const auto& [existing, state] : topics_) {
            if (collision_key(existing) == collision_key(name)) {
                if (error_message != nullptr) {
                    *error_message = "topic " + name + " collides with existing topic " + existing;
                }
                return fail(errc::invalid_topic_name);
            }
        }
    }
    auto state = std::make_shared<topic_state>();
    state->info = {name, uuid::random(), partitions, *cfg, overrides, internal};
    state->config = std::make_shared<const topic_config>(*cfg);
    if (validate_only) {
        return state->info;
    }
    auto undo = [&] {
        for (auto& p : state->partitions) {
            (void)p->close(false);
        }
        for (std::int32_t p = 0; p < static_cast<std::int32_t>(state->partitions.size()); ++p) {
            trash_partition_dir(partition_dir(name, p));
        }
    };
    for (std::int32_t p = 0; p < partitions; ++p) {
        auto log = open_partition(state->info, state->config, p, true, false);
        if (!log) {
            undo();
            return fail(log.error());
        }
        state->partitions.push_back(*log);
    }
    if (auto r = opts_.fs->sync_dir(opts_.data_dir); !r) {
        undo();
        return fail(io::is_disk_full(r.error()) ? errc::disk_full : errc::storage_error);
    }
    if (auto r = write_topic_file(state->info); !r) {
        undo();
        return fail(r.error());
    }
    {
        std::unique_lock lock(mu_);
        ids_[state->info.id] = name;
        topics_[name] = state;
    }
    storage_log().info("log: created {}topic {} (id {}, {} partitions)",
                       internal ? "internal " : "", name, state->info.id.to_base64(), partitions);
    return state->info;
}

result<void> log_manager::delete_topic(const std::string& name) {
    std::lock_guard admin(admin_mu_);
    std::shared_ptr<const topic_state> state;
    {
        std::shared_lock lock(mu_);
        if (closed_) {
            return fail(errc::log_closed);
        }
        auto it = topics_.find(name);
        if (it == topics_.end()) {
            return fail(errc::unknown_topic_or_partition);
        }
        state = it->second;
    }
    if (state->info.internal) {
        return fail(errc::policy_violation);
    }
    auto& fs = *opts_.fs;
    if (auto r = fs.remove(topic_file(name)); !r) {
        return fail(errc::storage_error);
    }
    if (auto r = fs.sync_dir(io::join_path(opts_.data_dir, "topics")); !r) {
        return fail(errc::storage_error);
    }
    {
        std::unique_lock lock(mu_);
        topics_.erase(name);
        ids_.erase(state->info.id);
    }
    for (const auto& p : state->partitions) {
        (void)p->close(false);
    }
    for (std::int32_t p = 0; p < state->info.partitions; ++p) {
        trash_partition_dir(partition_dir(name, p));
    }
    storage_log().info("log: deleted topic {} ({} partitions)", name, state->info.partitions);
    return {};
}

result<void> log_manager::create_partitions(const std::string& name, std::int32_t new_total,
                                            bool validate_only) {
    std::lock_guard admin(admin_mu_);
    std::shared_ptr<const topic_state> state;
    {
        std::shared_lock lock(mu_);
        if (closed_) {
            return fail(errc::log_closed);
        }
        auto it = topics_.find(name);
        if (it == topics_.end()) {
            return fail(errc::unknown_topic_or_partition);
        }
        state = it->second;
    }
    if (new_total <= state->info.partitions || new_total > opts_.max_partitions) {
        return fail(errc::invalid_partitions);
    }
    if (validate_only) {
        return {};
    }
    auto next = std::make_shared<topic_state>(*state);
    next->info.partitions = new_total;
    for (std::int32_t p = state->info.partitions; p < new_total; ++p) {
        auto log = open_partition(next->info, next->config, p, true, false);
        if (!log) {
            return fail(log.error());
        }
        next->partitions.push_back(*log);
    }
    if (auto r = opts_.fs->sync_dir(opts_.data_dir); !r) {
        return fail(errc::storage_error);
    }
    if (auto r = write_topic_file(next->info); !r) {
        return fail(r.error());
    }
    {
        std::unique_lock lock(mu_);
        topics_[name] = next;
    }
    storage_log().info("log: topic {} now has {} partitions", name, new_total);
    return {};
}

result<topic_info> log_manager::alter_config(const std::string& name,
                                             const std::map<std::string, std::string>& overrides,
                                             bool validate_only, std::string* error_message) {
    for (const auto& [k, v] : overrides) {
        if (k.find_first_of("=\n") != std::string::npos || v.find('\n') != std::string::npos) {
            if (error_message != nullptr) {
                *error_message = "invalid config entry " + k;
            }
            return fail(errc::invalid_config);
        }
    }
    std::lock_guard admin(admin_mu_);
    auto cfg = topic_config::from_overrides(overrides, defaults(), error_message);
    if (!cfg) {
        return fail(cfg.error());
    }
    std::shared_ptr<const topic_state> state;
    {
        std::shared_lock lock(mu_);
        if (closed_) {
            return fail(errc::log_closed);
        }
        auto it = topics_.find(name);
        if (it == topics_.end()) {
            return fail(errc::unknown_topic_or_partition);
        }
        state = it->second;
    }
    auto next = std::make_shared<topic_state>(*state);
    next->info.overrides = overrides;
    next->info.config = *cfg;
    next->config = std::make_shared<const topic_config>(*cfg);
    if (validate_only) {
        return next->info;
    }
    if (auto r = write_topic_file(next->info); !r) {
        return fail(r.error());
    }
    for (const auto& p : next->partitions) {
        p->set_config(next->config);
    }
    {
        std::unique_lock lock(mu_);
        topics_[name] = next;
    }
    storage_log().info("log: topic {} config changed ({} overrides)", name, overrides.size());
    return next->info;
}

topic_config log_manager::defaults() const {
    std::shared_lock lock(mu_);
    return opts_.defaults;
}

void log_manager::set_defaults(const topic_config& defaults) {
    std::lock_guard admin(admin_mu_);
    std::vector<std::shared_ptr<const topic_state>> states;
    {
        std::unique_lock lock(mu_);
        opts_.defaults = defaults;
        for (const auto& [name, state] : topics_) {
            states.push_back(state);
        }
    }
    std::size_t changed = 0;
    for (const auto& state : states) {
        std::string error;
        auto cfg = topic_config::from_overrides(state->info.overrides, defaults, &error);
        if (!cfg) {
            storage_log().error("log: topic {} keeps its config: its overrides do not apply over "
                                "the new defaults ({})",
                                state->info.name, error);
            continue;
        }
        if (*cfg == *state->config) {
            continue;
        }
        auto next = std::make_shared<topic_state>(*state);
        next->info.config = *cfg;
        next->config = std::make_shared<const topic_config>(*cfg);
        for (const auto& p : next->partitions) {
            p->set_config(next->config);
        }
        {
            std::unique_lock lock(mu_);
            topics_[state->info.name] = next;
        }
        ++changed;
    }
    storage_log().info("log: topic defaults changed ({} of {} topics affected)", changed,
                       states.size());
}

std::optional<topic_info> log_manager::find_topic(const std::string& name) const {
    std::shared_lock lock(mu_);
    auto it = topics_.find(name);
    if (it == topics_.end()) {
        return std::nullopt;
    }
    return it->second->info;
}

std::optional<topic_info> log_manager::find_topic(const sluice::uuid& id) const {
    std::shared_lock lock(mu_);
    auto it = ids_.find(id);
    if (it == ids_.end()) {
        return std::nullopt;
    }
    auto t = topics_.find(it->second);
    if (t == topics_.end()) {
        return std::nullopt;
    }
    return t->second->info;
}

std::vector<topic_info> log_manager::list_topics() const {
    std::shared_lock lock(mu_);
    std::vector<topic_info> out;
    out.reserve(topics_.size());
    for (const auto& [name, state] : topics_) {
        out.push_back(state->info);
    }
    return out;
}

std::shared_ptr<partition_log> log_manager::partition(const std::string& topic,
                                                      partition_id p) const {
    std::shared_lock lock(mu_);
    auto it = topics_.find(topic);
    if (it == topics_.end() || p.value < 0 ||
        p.value >= static_cast<std::int32_t>(it->second->partitions.size())) {
        return nullptr;
    }
    return it->second->partitions[static_cast<std::size_t>(p.value)];
}

std::vector<std::shared_ptr<partition_log>> log_manager::partitions(
    const std::string& topic) const {
    std::shared_lock lock(mu_);
    auto it = topics_.find(topic);
    if (it == topics_.end()) {
        return {};
    }
    return it->second->partitions;
}

std::size_t log_manager::open_files() const {
    return env_ ? env_->files->open_count() : 0;
}

std::vector<std::shared_ptr<log_manager::topic_state>> log_manager::snapshot() const {
    std::shared_lock lock(mu_);
    std::vector<std::shared_ptr<topic_state>> out;
    for (const auto& [name, state] : topics_) {
        out.push_back(std::const_pointer_cast<topic_state>(state));
    }
    return out;
}

retention_result log_manager::run_retention(std::int64_t now_ms) {
    retention_result total;
    for (const auto& t : snapshot()) {
        for (const auto& p : t->partitions) {
            auto r = p->apply_retention(now_ms);
            if (r) {
                total.segments_deleted += r->segments_deleted;
                total.bytes_deleted += r->bytes_deleted;
            }
        }
    }
    return total;
}

compaction_result log_manager::run_compaction(std::int64_t now_ms) {
    compaction_result total;
    for (const auto& t : snapshot()) {
        if (!t->config->cleanup_compact) {
            continue;
        }
        for (const auto& p : t->partitions) {
            if (!p->needs_compaction(now_ms)) {
                continue;
            }
            auto r = p->compact(now_ms);
            if (r) {
                total.segments_cleaned += r->segments_cleaned;
                total.bytes_before += r->bytes_before;
                total.bytes_after += r->bytes_after;
                total.records_removed += r->records_removed;
            } else {
                storage_log().warn("{}-{}: compaction failed: {}", p->topic(), p->partition().value,
                                   r.error().message());
            }
        }
    }
    return total;
}

void log_manager::flush_all() {
    for (const auto& t : snapshot()) {
        for (const auto& p : t->partitions) {
            if (p->needs_sync()) {
                p->request_sync();
            }
        }
    }
}

void log_manager::background_loop() {
    using clock = std::chrono::steady_clock;
    auto next_flush = clock::now() + opts_.flush_interval;
    auto next_retention = clock::now() + opts_.retention_check_interval;
    auto next_compaction = clock::now() + opts_.compaction_check_interval;
    const bool flushes = opts_.flush == flush_policy::interval && opts_.flush_interval.count() > 0;
    const bool retention = opts_.retention_check_interval.count() > 0;
    const bool compaction = opts_.compaction_check_interval.count() > 0;
    while (true) {
        auto wake = clock::now() + std::chrono::hours(1);
        if (flushes) {
            wake = std::min(wake, next_flush);
        }
        if (retention) {
            wake = std::min(wake, next_retention);
        }
        if (compaction) {
            wake = std::min(wake, next_compaction);
        }
        {
            std::unique_lock lock(bg_mu_);
            bg_cv_.wait_until(lock, wake);
            if (bg_stop_) {
                return;
            }
        }
        empty_trash();
        auto now = clock::now();
        if (flushes && now >= next_flush) {
            flush_all();
            next_flush = now + opts_.flush_interval;
        }
        if (retention && now >= next_retention) {
            run_retention(opts_.clock());
            next_retention = now + opts_.retention_check_interval;
        }
        if (compaction && now >= next_compaction) {
            run_compaction(opts_.clock());
            next_compaction = now + opts_.compaction_check_interval;
        }
    }
}

void log_manager::close() {
    {
        std::unique_lock lock(mu_);
        if (closed_) {
            return;
        }
        closed_ = true;
    }
    {
        std::lock_guard lock(bg_mu_);
        bg_stop_ = true;
    }
    bg_cv_.notify_all();
    if (bg_.joinable()) {
        bg_.join();
    }
    std::lock_guard admin(admin_mu_);
    bool all_clean = true;
    std::map<std::string, std::shared_ptr<const topic_state>> topics;
    {
        std::unique_lock lock(mu_);
        topics.swap(topics_);
        ids_.clear();
    }
    // Each partition's final flush is a few small writes and fsyncs: with thousands of
    // partitions, doing them one after another made shutdown take many seconds, so several
    // threads share them (the disk queues concurrent fsyncs well).
    std::vector<std::shared_ptr<partition_log>> all;
    for (const auto& [name, state] : topics) {
        all.insert(all.end(), state->partitions.begin(), state->partitions.end());
    }
    std::atomic<std::size_t> next{0};
    std::atomic<bool> clean{true};
    auto close_some = [&] {
        for (std::size_t i = next++; i < all.size(); i = next++) {
            if (auto r = all[i]->close(true); !r) {
                clean = false;
            }
        }
    };
    const std::size_t helpers = std::min<std::size_t>(all.size() / 64, 7);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < helpers; ++i) {
        threads.emplace_back(close_some);
    }
    close_some();
    for (auto& t : threads) {
        t.join();
    }
    all_clean = clean.load();
    if (env_) {
        env_->fsyncs->stop();
    }
    if (all_clean && started_) {
        auto& fs = *opts_.fs;
        const std::string marker = io::join_path(opts_.data_dir, clean_marker);
        auto f = fs.open(marker, io::open_mode::create_new);
        if (f && (*f)->sync()) {
            (void)fs.sync_dir(opts_.data_dir);
        }
    }
    empty_trash();
    storage_log().info("log: closed {}{}", opts_.data_dir,
                       all_clean ? "" : " (unclean: a flush failed)");
}

log_manager::~log_manager() {
    close();
}

}  // namespace sluice::backend::log
