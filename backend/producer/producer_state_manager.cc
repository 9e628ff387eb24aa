#include "backend/producer/producer_state_manager.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <cstdio>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "backend/logger.h"
#include "backend/producer/errc.h"

namespace sluice::backend::producer {

namespace {
constexpr std::string_view snapshot_ext = ".snapshot";

std::vector<std::int64_t> list_snapshots(io::file_system& fs, const std::string& dir) {
    std::vector<std::int64_t> out;
    auto names = fs.list(dir);
    if (!names) {
        return out;
    }
    for (const auto& n : *names) {
        if (auto v = parse_snapshot_name(n)) {
            out.push_back(*v);
        }
    }
    std::sort(out.begin(), out.end(), std::greater<>());
    return out;
}
}  // namespace

std::optional<std::int64_t> parse_snapshot_name(std::string_view name) {
    if (name.size() != 20 + snapshot_ext.size() || name.substr(20) != snapshot_ext) {
        return std::nullopt;
    }
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + 20, v);
    if (ec != std::errc{} || p != name.data() + 20 || v < 0) {
        return std::nullopt;
    }
    return v;
}

std::string snapshot_file_name(std::int64_t end) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(end));
    return std::string(buf) + std::string(snapshot_ext);
}

producer_state_manager::producer_state_manager(log::log_manager& log,
                                               std::shared_ptr<io::file_system> fs,
                                               producer_state_settings settings,
                                               log::clock_fn clock)
    : log_(log), fs_(std::move(fs)), settings_(settings), clock_(std::move(clock)) {}

producer_state_manager::~producer_state_manager() { stop(); }

void producer_state_manager::start(bool maintenance_thread) {
    remove_stray_snapshots();
    if (maintenance_thread && !bg_.joinable()) {
        bg_ = std::thread([this] { maintenance_loop(); });
    }
}

void producer_state_manager::stop() {
    {
        std::lock_guard lock(bg_mu_);
        if (bg_stop_) {
            return;
        }
        bg_stop_ = true;
    }
    bg_cv_.notify_all();
    if (bg_.joinable()) {
        bg_.join();
    }
    const std::size_t n = write_snapshots();
    if (n > 0) {
        producer_log().info("wrote {} producer state snapshots at shutdown", n);
    }
}

void producer_state_manager::remove_stray_snapshots() {
    // A snapshot past its partition's end describes bytes a power loss took away: it must never
    // be loaded, not even after the log grows past it again.
    for (const auto& t : log_.list_topics()) {
        for (const auto& p : log_.partitions(t.name)) {
            const std::int64_t end = p->log_end_offset().value;
            for (std::int64_t s : list_snapshots(*fs_, p->dir())) {
                if (s > end) {
                    producer_log().warn("{}-{}: removing producer snapshot at {} past the log end {}",
                                        p->topic(), p->partition().value, s, end);
                    (void)fs_->remove(io::join_path(p->dir(), snapshot_file_name(s)));
                }
            }
        }
    }
}

std::shared_ptr<producer_state_manager::slot> producer_state_manager::slot_for(
    const std::shared_ptr<log::partition_log>& log) {
    std::lock_guard lock(mu_);
    auto& entry = slots_[log->dir()];
    if (!entry || entry->log.lock() != log) {
        // First use, or the topic was deleted and created again under the same folder.
        entry = std::make_shared<slot>();
        entry->log = log;
    }
    return entry;
}

result<std::shared_ptr<partition_producer_state>> producer_state_manager::load_slot(
    slot& s, const std::shared_ptr<log::partition_log>& log) {
    std::lock_guard load_lock(s.load_mu);
    if (!s.state) {
        auto loaded = load(*log);
        if (!loaded) {
            return fail(loaded.error());
        }
        s.state = std::move(*loaded);
    }
    return s.state;
}

result<std::shared_ptr<partition_producer_state>> producer_state_manager::state_for(
    const std::shared_ptr<log::partition_log>& log) {
    auto s = slot_for(log);
    return load_slot(*s, log);
}

std::shared_ptr<partition_producer_state> producer_state_manager::ready_state(
    const std::shared_ptr<log::partition_log>& log) {
    std::lock_guard lock(mu_);
    auto it = slots_.find(log->dir());
    if (it == slots_.end() || !it->second->ready || it->second->log.lock() != log) {
        return nullptr;
    }
    return it->second->ready;
}

namespace {

/// A turn waiter that resumes an asio completion handler on its own executor.
template <typename Handler, typename Waiter, typename State>
class turn_op final : public Waiter {
public:
    explicit turn_op(Handler h)
        : handler_(std::move(h)),
          work_(boost::asio::prefer(boost::asio::get_associated_executor(handler_),
                                    boost::asio::execution::outstanding_work.tracked)) {}
    void complete(result<State> r) override {
        boost::asio::post(work_, [h = std::move(handler_), r = std::move(r)]() mutable {
            h(std::move(r));
        });
    }

private:
    Handler handler_;
    boost::asio::any_io_executor work_;
};

}  // namespace

void producer_state_manager::grant_next_locked(const std::shared_ptr<slot>& s,
                                               const boost::asio::any_io_executor& loader) {
    auto next = std::move(s->waiting.front());
    s->waiting.pop_front();
    std::shared_ptr<partition_producer_state> st;
    {
        std::lock_guard load_lock(s->load_mu);
        st = s->state;
    }
    if (st) {
        next->complete(std::move(st));
        return;
    }
    auto log = s->log.lock();
    if (!log) {
        next->complete(fail(errc::storage_error));
        return;
    }
    // The load reads the disk: never on the caller's (io) thread.
    boost::asio::post(loader, [this, s, log, w = std::shared_ptr<turn_waiter>(std::move(next))] {
        w->complete(load_slot(*s, log));
    });
}

void producer_state_manager::release_turn(const std::shared_ptr<slot>& s,
                                          const boost::asio::any_io_executor& loader) {
    std::lock_guard lock(mu_);
    if (!s->waiting.empty()) {
        grant_next_locked(s, loader);
        return;
    }
    s->busy = false;
    std::lock_guard load_lock(s->load_mu);
    s->ready = s->state;
}

boost::asio::awaitable<result<producer_state_manager::turn>> producer_state_manager::wait_turn(
    std::shared_ptr<log::partition_log> log, boost::asio::any_io_executor loader) {
    auto s = slot_for(log);
    using state_ptr = std::shared_ptr<partition_producer_state>;
    {
        std::lock_guard lock(mu_);
        if (s->ready) {
            turn t;
            t.state_ = s->ready;
            co_return t;
        }
    }
    auto initiate = [this, s, loader](auto handler) {
        using op = turn_op<decltype(handler), turn_waiter, state_ptr>;
        std::lock_guard lock(mu_);
        s->waiting.push_back(std::make_unique<op>(std::move(handler)));
        if (!s->busy) {
            s->busy = true;
            grant_next_locked(s, loader);
        }
    };
    result<state_ptr> granted = co_await boost::asio::async_initiate<
        const boost::asio::use_awaitable_t<>&, void(result<state_ptr>)>(initiate,
                                                                        boost::asio::use_awaitable);
    turn t;
    t.owner_ = this;
    t.slot_ = s;
    t.loader_ = loader;
    if (!granted) {
        t.release();  // the next waiter tries the load again
        co_return fail(granted.error());
    }
    t.state_ = std::move(*granted);
    co_return t;
}

producer_state_manager::turn& producer_state_manager::turn::operator=(turn&& o) noexcept {
    if (this != &o) {
        release();
        owner_ = std::exchange(o.owner_, nullptr);
        slot_ = std::move(o.slot_);
        state_ = std::move(o.state_);
        loader_ = std::move(o.loader_);
    }
    return *this;
}

void producer_state_manager::turn::release() {
    if (owner_ != nullptr && slot_) {
        owner_->release_turn(slot_, loader_);
    }
    owner_ = nullptr;
    slot_.reset();
}

result<std::shared_ptr<partition_producer_state>> producer_state_manager::load(
    log::partition_log& log) {
    auto st = std::make_shared<partition_producer_state>(log.topic(), log.partition());
    const std::int64_t end = log.log_end_offset().value;
    std::int64_t from = log.log_start_offset().value;
    bool from_snapshot = false;
    for (std::int64_t s : list_snapshots(*fs_, log.dir())) {
        if (s > end) {
            continue;
        }
        auto bytes = io::read_whole_file(*fs_, io::join_path(log.dir(), snapshot_file_name(s)));
        if (bytes && st->load_snapshot(protocol::bytes_view(bytes->data(), bytes->size()))) {
            from = std::max(from, s);
            from_snapshot = true;
            break;
        }
        producer_log().warn("{}-{}: producer snapshot {} is unreadable; using an older one",
                            log.topic(), log.partition().value, s);
        st = std::make_shared<partition_producer_state>(log.topic(), log.partition());
    }
    if (from_snapshot) {
        if (auto v = drop_removed_aborted(log, *st); !v) {
            return fail(v.error());
        }
        // Before the replay: a later transaction of the same producer must start afresh.
        if (auto v = end_lost_transactions(log, *st); !v) {
            return fail(v.error());
        }
    }
    std::size_t batches = 0;
    auto replayed = log.replay(offset(from), [&](protocol::bytes_view batch) {
        st->apply_stored(batch);
        ++batches;
        return true;
    });
    if (!replayed) {
        producer_log().error("{}-{}: cannot rebuild the producer state: {}", log.topic(),
                             log.partition().value, replayed.error().message());
        return fail(errc::storage_error);
    }
    if (batches > 0) {
        producer_log().debug("{}-{}: producer state rebuilt from offset {} ({} batches)",
                             log.topic(), log.partition().value, from, batches);
    }
    return st;
}

result<void> producer_state_manager::drop_removed_aborted(log::partition_log& log,
                                                          partition_producer_state& st) {
    // The snapshot may predate a compaction that removed abort markers (compactor.cc): a
    // transaction listed without its marker would hide the producer's later transactions
    // from read_committed clients. Markers below the log start are expire()'s business.
    const std::int64_t start = log.log_start_offset().value;
    std::size_t dropped = 0;
    for (const auto& a : st.aborted_between(start, std::numeric_limits<std::int64_t>::max())) {
        auto h = log.batch_header_at(offset(a.last_offset));
        if (!h) {
            producer_log().error("{}-{}: cannot check the aborted transactions: {}", log.topic(),
                                 log.partition().value, h.error().message());
            return fail(errc::storage_error);
        }
        if (!*h || !(*h)->is_control() || (*h)->producer_id != a.producer_id) {
            st.forget_aborted(a.producer_id, a.last_offset);
            ++dropped;
        }
    }
    if (dropped > 0) {
        producer_log().info("{}-{}: {} aborted transactions of the producer snapshot have no "
                            "marker in the log any more (compacted away); no longer listed",
                            log.topic(), log.partition().value, dropped);
    }
    return {};
}

result<void> producer_state_manager::end_lost_transactions(log::partition_log& log,
                                                           partition_producer_state& st) {
    // A transaction open when the snapshot was written is still open, or it ended after the
    // snapshot. Compaction copies an open transaction's batches as they are, so its first
    // batch is still at its offset; when it is not, the transaction ended and compaction
    // removed its first batch (and perhaps all of its data and its marker: a marker goes only
    // with the last of its transaction's data). It is ended here, before the replay: the
    // replay would not meet a removed marker, and would take the producer's next transaction
    // for the rest of this one (pinning the last stable offset at the removed first batch).
    // A marker still in the log finds the transaction ended: as for a replay from the start,
    // nothing is listed for an aborted transaction whose records are all gone.
    const std::int64_t start = log.log_start_offset().value;
    for (const auto& [first, pid] : st.ongoing()) {
        if (first < start) {
            continue;
        }
        auto h = log.batch_header_at(offset(first));
        if (!h) {
            producer_log().error("{}-{}: cannot check the open transactions: {}", log.topic(),
                                 log.partition().value, h.error().message());
            return fail(errc::storage_error);
        }
        if (!*h || (*h)->is_control() || !(*h)->is_transactional() ||
            (*h)->producer_id != pid) {
            producer_log().info("{}-{}: the first batch of producer {}'s transaction from "
                                "offset {} was compacted away, so it ended; it is not open",
                                log.topic(), log.partition().value, pid, first);
            st.end_lost_txn(pid, first);
        }
    }
    return {};
}

result<void> producer_state_manager::write_snapshot(log::partition_log& log,
                                                    partition_producer_state& st) {
    std::int64_t end = 0;
    auto bytes = st.encode_snapshot(end);
    const std::string path = io::join_path(log.dir(), snapshot_file_name(end));
    if (auto w = io::write_file_atomic(*fs_, path, bytes.view()); !w) {
        return fail(errc::storage_error);
    }
    st.mark_snapshotted(end);
    auto all = list_snapshots(*fs_, log.dir());
    for (std::size_t i = settings_.snapshots_to_keep; i < all.size(); ++i) {
        (void)fs_->remove(io::join_path(log.dir(), snapshot_file_name(all[i])));
    }
    return {};
}

std::size_t producer_state_manager::write_snapshots() {
    std::lock_guard pass(snapshot_mu_);
    std::vector<std::shared_ptr<slot>> slots;
    {
        std::lock_guard lock(mu_);
        for (auto& [_, s] : slots_) {
            slots.push_back(s);
        }
    }
    std::size_t written = 0;
    for (auto& s : slots) {
        std::shared_ptr<partition_producer_state> st;
        {
            std::lock_guard load_lock(s->load_mu);
            st = s->state;
        }
        auto log = s->log.lock();
        if (!st || !log || log->closed()) {
            continue;
        }
        st->forget_removed(*log);  // a snapshot never lists a transaction whose marker is gone
        if (!st->dirty()) {
            continue;
        }
        if (auto w = write_snapshot(*log, *st); !w) {
            producer_log().warn("{}-{}: cannot write a producer state snapshot", log->topic(),
                                log->partition().value);
            continue;
        }
        ++written;
    }
    return written;
}

std::size_t producer_state_manager::expire_producers() {
    std::vector<std::shared_ptr<slot>> slots;
    {
        std::lock_guard lock(mu_);
        for (auto it = slots_.begin(); it != slots_.end();) {
            if (it->second->log.expired()) {
                it = slots_.erase(it);  // the partition was deleted
            } else {
                slots.push_back(it->second);
                ++it;
            }
        }
    }
    const std::int64_t now = clock_();
    std::size_t removed = 0;
    for (auto& s : slots) {
        std::shared_ptr<partition_producer_state> st;
        {
            std::lock_guard load_lock(s->load_mu);
            st = s->state;
        }
        auto log = s->log.lock();
        if (st && log) {
            removed += st->expire(now, settings_.producer_id_expiration_ms,
                                  log->log_start_offset().value);
        }
    }
    return removed;
}

void producer_state_manager::maintenance_loop() {
    const auto tick = std::chrono::milliseconds(
        std::max<std::int64_t>(1000, std::min(settings_.snapshot_interval_ms,
                                              settings_.expiration_check_interval_ms)));
    auto next_snapshot = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(settings_.snapshot_interval_ms);
    auto next_expiry = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(settings_.expiration_check_interval_ms);
    std::unique_lock lock(bg_mu_);
    while (!bg_stop_) {
        bg_cv_.wait_for(lock, tick, [this] { return bg_stop_; });
        if (bg_stop_) {
            break;
        }
        lock.unlock();
        const auto now = std::chrono::steady_clock::now();
        if (now >= next_expiry) {
            if (auto n = expire_producers(); n > 0) {
                producer_log().info("expired {} idle producer ids and aborted-index entries", n);
            }
            next_expiry = now + std::chrono::milliseconds(settings_.expiration_check_interval_ms);
        }
        if (now >= next_snapshot) {
            (void)write_snapshots();
            next_snapshot = now + std::chrono::milliseconds(settings_.snapshot_interval_ms);
        }
        lock.lock();
    }
}

}  // namespace sluice::backend::producer
