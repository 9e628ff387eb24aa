#include "backend/io/memory_file_system.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

namespace sluice::backend::io {

struct memory_file_system::node {
    explicit node(bool dir, std::shared_ptr<std::atomic<std::uint64_t>> used)
        : is_dir(dir), used_bytes(std::move(used)) {}
    ~node() { used_bytes->fetch_sub(data.size()); }
    node(const node&) = delete;
    node& operator=(const node&) = delete;

    bool is_dir;
    // Files: the content as written; the synced length; and, when bytes below the synced
    // length were changed since the last sync, the content as of that sync.
    std::vector<std::byte> data;
    std::uint64_t durable_len = 0;
    std::optional<std::vector<std::byte>> durable_copy;
    // The lowest position written or cut since the last sync: write-back after it is partial.
    std::uint64_t changed_from = 0;
    // Directories: the entries now and as of the last sync_dir().
    std::map<std::string, std::shared_ptr<node>> entries;
    std::map<std::string, std::shared_ptr<node>> durable_entries;
    std::shared_ptr<std::atomic<std::uint64_t>> used_bytes;

    void resize(std::size_t n) {
        if (n < data.size()) {
            used_bytes->fetch_sub(data.size() - n);
        } else {
            used_bytes->fetch_add(n - data.size());
        }
        data.resize(n);
    }
    /// Before changing bytes below the synced length, remember the synced content.
    void preserve_durable(std::uint64_t from) {
        changed_from = std::min({changed_from, from, static_cast<std::uint64_t>(data.size())});
        if (from < durable_len && !durable_copy) {
            durable_copy.emplace(data.begin(),
                                 data.begin() + static_cast<std::ptrdiff_t>(durable_len));
        }
    }
    std::vector<std::byte> durable_content() const {
        if (durable_copy) {
            return *durable_copy;
        }
        return {data.begin(), data.begin() + static_cast<std::ptrdiff_t>(durable_len)};
    }
};

struct memory_file_system::state {
    mutable std::mutex mu;
    std::shared_ptr<std::atomic<std::uint64_t>> used =
        std::make_shared<std::atomic<std::uint64_t>>(0);
    std::shared_ptr<node> root = std::make_shared<node>(true, used);
    std::optional<std::uint64_t> capacity;
    int failing_syncs = 0;
    std::error_code sync_error;
    int failing_writes = 0;
    std::error_code write_error;
    std::uint64_t syncs = 0;
    std::string rename_needle;
    int rename_skip = 0;
    int failing_renames = 0;
    std::error_code rename_error;

    std::shared_ptr<node> make_node(bool dir) { return std::make_shared<node>(dir, used); }
};

namespace {

using node = memory_file_system::node;
using state = memory_file_system::state;

std::vector<std::string> split(const std::string& path) {
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i < path.size()) {
        std::size_t j = path.find('/', i);
        if (j == std::string::npos) {
            j = path.size();
        }
        if (j > i) {
            std::string part = path.substr(i, j - i);
            if (part != ".") {
                parts.push_back(std::move(part));
            }
        }
        i = j + 1;
    }
    return parts;
}

// Walks to the node named by `parts`; nullptr when a component is missing or not a directory.
std::shared_ptr<node> walk(const std::shared_ptr<node>& root, const std::vector<std::string>& parts,
                           std::size_t count) {
    std::shared_ptr<node> cur = root;
    for (std::size_t i = 0; i < count; ++i) {
        if (!cur->is_dir) {
            return nullptr;
        }
        auto it = cur->entries.find(parts[i]);
        if (it == cur->entries.end()) {
            return nullptr;
        }
        cur = it->second;
    }
    return cur;
}

struct located {
    std::shared_ptr<node> parent;
    std::string name;
};

result<located> locate_parent(const std::shared_ptr<node>& root, const std::string& path) {
    auto parts = split(path);
    if (parts.empty()) {
        return fail(errno_code(EINVAL));
    }
    // As on Linux: no path component longer than NAME_MAX (255 bytes).
    if (std::any_of(parts.begin(), parts.end(),
                    [](const std::string& part) { return part.size() > max_name_bytes; })) {
        return fail(errno_code(ENAMETOOLONG));
    }
    auto parent = walk(root, parts, parts.size() - 1);
    if (!parent) {
        return fail(errno_code(ENOENT));
    }
    if (!parent->is_dir) {
        return fail(errno_code(ENOTDIR));
    }
    return located{parent, parts.back()};
}

class memory_file final : public file {
public:
    memory_file(std::shared_ptr<state> st, std::shared_ptr<node> n, bool writable)
        : st_(std::move(st)), node_(std::move(n)), writable_(writable) {}

    result<std::size_t> read_at(std::span<std::byte> buf, std::uint64_t pos) override {
        std::lock_guard lock(st_->mu);
        if (pos >= node_->data.size()) {
            return std::size_t{0};
        }
        std::size_t n = std::min<std::size_t>(buf.size(), node_->data.size() - pos);
        if (n > 0) {
            std::memcpy(buf.data(), node_->data.data() + pos, n);
        }
        return n;
    }

    result<void> write_at(std::span<const std::byte> data, std::uint64_t pos) override {
        std::lock_guard lock(st_->mu);
        if (!writable_) {
            return fail(errno_code(EBADF));
        }
        if (st_->failing_writes > 0) {
            --st_->failing_writes;
            return fail(st_->write_error);
        }
        std::uint64_t end = pos + data.size();
        std::size_t fits = data.size();
        bool full = false;
        if (st_->capacity && end > node_->data.size()) {
            std::uint64_t growth = end - std::max<std::uint64_t>(pos, node_->data.size());
            std::uint64_t used = st_->used->load();
            std::uint64_t room = *st_->capacity > used ? *st_->capacity - used : 0;
            if (growth > room) {
                full = true;
                std::uint64_t overlap = node_->data.size() > pos ? node_->data.size() - pos : 0;
                fits =
                    static_cast<std::size_t>(std::min<std::uint64_t>(data.size(), overlap + room));
                if (pos > node_->data.size() && room < pos - node_->data.size()) {
                    fits = 0;
                }
            }
        }
        if (fits > 0) {
            node_->preserve_durable(pos);
            if (pos + fits > node_->data.size()) {
                node_->resize(static_cast<std::size_t>(pos + fits));
            }
            std::memcpy(node_->data.data() + pos, data.data(), fits);
        }
        if (full) {
            return fail(errno_code(ENOSPC));
        }
        return {};
    }

    result<void> sync() override {
        std::lock_guard lock(st_->mu);
        if (st_->failing_syncs > 0) {
            --st_->failing_syncs;
            return fail(st_->sync_error);
        }
        node_->durable_copy.reset();
        node_->durable_len = node_->data.size();
        node_->changed_from = node_->durable_len;
        ++st_->syncs;
        return {};
    }

    result<void> truncate(std::uint64_t size) override {
        std::lock_guard lock(st_->mu);
        if (!writable_) {
            return fail(errno_code(EBADF));
        }
        node_->preserve_durable(size);
        node_->resize(static_cast<std::size_t>(size));
        return {};
    }

    result<std::uint64_t> size() override {
        std::lock_guard lock(st_->mu);
        return static_cast<std::uint64_t>(node_->data.size());
    }

private:
    std::shared_ptr<state> st_;
    std::shared_ptr<node> node_;
    bool writable_;
};

// Deep copy of what survives a power loss, following durable directory entries only.
std::shared_ptr<node> copy_durable(state& fresh, const node& from, std::mt19937_64& rng,
                                   bool keep_prefix) {
    auto out = fresh.make_node(from.is_dir);
    if (from.is_dir) {
        for (const auto& [name, child] : from.durable_entries) {
            auto c = copy_durable(fresh, *child, rng, keep_prefix);
            out->entries.emplace(name, c);
            out->durable_entries.emplace(name, c);
        }
        return out;
    }
    std::vector<std::byte> content = from.durable_content();
    const std::uint64_t changed = std::min<std::uint64_t>(from.changed_from, from.data.size());
    if (keep_prefix && from.data.size() > changed) {
        // A partial write-back: the first `keep` bytes of what changed since the last sync made
        // it to the disk (over the synced bytes, or past them), the rest did not.
        std::uint64_t extra = from.data.size() - changed;
        std::uint64_t keep = std::uniform_int_distribution<std::uint64_t>(0, extra)(rng);
        if (content.size() < changed + keep) {
            content.resize(changed + keep);
        }
        std::copy(from.data.begin() + static_cast<std::ptrdiff_t>(changed),
                  from.data.begin() + static_cast<std::ptrdiff_t>(changed + keep),
                  content.begin() + static_cast<std::ptrdiff_t>(changed));
    }
    out->resize(content.size());
    std::copy(content.begin(), content.end(), out->data.begin());
    out->durable_len = out->data.size();
    return out;
}

}  // namespace

memory_file_system::memory_file_system() : state_(std::make_shared<state>()) {}
memory_file_system::~memory_file_system() = default;

result<std::shared_ptr<file>> memory_file_system::open(const std::string& path, open_mode mode) {
    std::lock_guard lock(state_->mu);
    auto loc = locate_parent(state_->root, path);
    if (!loc) {
        return fail(loc.error());
    }
    auto& entries = loc->parent->entries;
    auto it = entries.find(loc->name);
    std::shared_ptr<node> n;
    if (it == entries.end()) {
        if (mode == open_mode::read_only || mode == open_mode::read_write) {
            return fail(errno_code(ENOENT));
        }
        n = state_->make_node(false);
        entries.emplace(loc->name, n);
    } else {
        n = it->second;
        if (n->is_dir) {
            return fail(errno_code(EISDIR));
        }
        if (mode == open_mode::create_new) {
            n->preserve_durable(0);
            n->resize(0);
        }
    }
    return std::shared_ptr<file>(
        std::make_shared<memory_file>(state_, n, mode != open_mode::read_only));
}

result<void> memory_file_system::create_directory(const std::string& path) {
    std::lock_guard lock(state_->mu);
    auto loc = locate_parent(state_->root, path);
    if (!loc) {
        return fail(loc.error());
    }
    auto it = loc->parent->entries.find(loc->name);
    if (it != loc->parent->entries.end()) {
        if (!it->second->is_dir) {
            return fail(errno_code(EEXIST));
        }
        return {};
    }
    loc->parent->entries.emplace(loc->name, state_->make_node(true));
    return {};
}

result<void> memory_file_system::remove(const std::string& path) {
    std::shared_ptr<node> victim;  // released after the lock: its destructor adjusts counters
    std::lock_guard lock(state_->mu);
    auto loc = locate_parent(state_->root, path);
    if (!loc) {
        return loc.error() == std::errc::no_such_file_or_directory ? result<void>{}
                                                                   : fail(loc.error());
    }
    auto it = loc->parent->entries.find(loc->name);
    if (it == loc->parent->entries.end()) {
        return {};
    }
    if (it->second->is_dir && !it->second->entries.empty()) {
        return fail(errno_code(ENOTEMPTY));
    }
    victim = it->second;
    loc->parent->entries.erase(it);
    return {};
}

result<void> memory_file_system::remove_all(const std::string& path) {
    std::shared_ptr<node> victim;
    std::lock_guard lock(state_->mu);
    auto loc = locate_parent(state_->root, path);
    if (!loc) {
        return loc.error() == std::errc::no_such_file_or_directory ? result<void>{}
                                                                   : fail(loc.error());
    }
    auto it = loc->parent->entries.find(loc->name);
    if (it == loc->parent->entries.end()) {
        return {};
    }
    victim = it->second;
    loc->parent->entries.erase(it);
    return {};
}

result<void> memory_file_system::rename(const std::string& from, const std::string& to) {
    std::shared_ptr<node> replaced;
    std::lock_guard lock(state_->mu);
    if (state_->failing_renames > 0 && (from.find(state_->rename_needle) != std::string::npos ||
                                        to.find(state_->rename_needle) != std::string::npos)) {
        if (state_->rename_skip > 0) {
            --state_->rename_skip;
        } else {
            --state_->failing_renames;
            return fail(state_->rename_error);
        }
    }
    auto src = locate_parent(state_->root, from);
    if (!src) {
        return fail(src.error());
    }
    auto dst = locate_parent(state_->root, to);
    if (!dst) {
        return fail(dst.error());
    }
    auto it = src->parent->entries.find(src->name);
    if (it == src->parent->entries.end()) {
        return fail(errno_code(ENOENT));
    }
    std::shared_ptr<node> moving = it->second;
    auto existing = dst->parent->entries.find(dst->name);
    if (existing != dst->parent->entries.end()) {
        if (existing->second == moving) {
            return {};
        }
        if (existing->second->is_dir != moving->is_dir) {
            return fail(errno_code(moving->is_dir ? ENOTDIR : EISDIR));
        }
        if (existing->second->is_dir && !existing->second->entries.empty()) {
            return fail(errno_code(ENOTEMPTY));
        }
        replaced = existing->second;
    }
    src->parent->entries.erase(it);
    dst->parent->entries[dst->name] = moving;
    return {};
}

result<std::vector<std::string>> memory_file_system::list(const std::string& dir) {
    std::lock_guard lock(state_->mu);
    auto parts = split(dir);
    auto n = walk(state_->root, parts, parts.size());
    if (!n) {
        return fail(errno_code(ENOENT));
    }
    if (!n->is_dir) {
        return fail(errno_code(ENOTDIR));
    }
    std::vector<std::string> out;
    for (const auto& [name, child] : n->entries) {
        out.push_back(name);
    }
    return out;
}

result<bool> memory_file_system::exists(const std::string& path) {
    std::lock_guard lock(state_->mu);
    auto parts = split(path);
    return walk(state_->root, parts, parts.size()) != nullptr;
}

result<bool> memory_file_system::is_directory(const std::string& path) {
    std::lock_guard lock(state_->mu);
    auto parts = split(path);
    auto n = walk(state_->root, parts, parts.size());
    return n != nullptr && n->is_dir;
}

result<void> memory_file_system::sync_dir(const std::string& dir) {
    std::lock_guard lock(state_->mu);
    auto parts = split(dir);
    auto n = walk(state_->root, parts, parts.size());
    if (!n) {
        return fail(errno_code(ENOENT));
    }
    if (!n->is_dir) {
        return fail(errno_code(ENOTDIR));
    }
    n->durable_entries = n->entries;
    return {};
}

std::shared_ptr<memory_file_system> memory_file_system::crash_copy(crash_options opts) const {
    auto out = std::make_shared<memory_file_system>();
    std::lock_guard lock(state_->mu);
    std::mt19937_64 rng(opts.seed);
    auto root = copy_durable(*out->state_, *state_->root, rng, opts.keep_random_unsynced_prefix);
    out->state_->root = root;
    return out;
}

void memory_file_system::set_capacity(std::optional<std::uint64_t> bytes) {
    std::lock_guard lock(state_->mu);
    state_->capacity = bytes;
}

std::uint64_t memory_file_system::used_bytes() const {
    return state_->used->load();
}

void memory_file_system::fail_next_syncs(int n, std::error_code ec) {
    std::lock_guard lock(state_->mu);
    state_->failing_syncs = n;
    state_->sync_error = ec;
}

void memory_file_system::fail_next_writes(int n, std::error_code ec) {
    std::lock_guard lock(state_->mu);
    state_->failing_writes = n;
    state_->write_error = ec;
}

void memory_file_system::fail_renames(std::string needle, int n, std::error_code ec, int skip) {
    std::lock_guard lock(state_->mu);
    state_->rename_needle = std::move(needle);
    state_->failing_renames = n;
    state_->rename_error = ec;
    state_->rename_skip = skip;
}

std::uint64_t memory_file_system::sync_count() const {
    std::lock_guard lock(state_->mu);
    return state_->syncs;
}

}  // namespace sluice::backend::io
