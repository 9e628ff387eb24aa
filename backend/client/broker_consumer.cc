#include "backend/client/broker_consumer.h"

#include <algorithm>
#include <list>
#include <mutex>
#include <set>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "backend/client/group_member.h"
#include "backend/client/record_reader.h"

namespace sluice::backend::client {
namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

namespace {

/// A change a coroutine on any executor can wait for with a deadline: read version(), check,
/// then wait(seen, deadline); a notify() in between makes the wait return at once.
class consumer_signal {
  public:
    std::uint64_t version() const {
        std::lock_guard lock(mu_);
        return version_;
    }
    void notify() {
        std::lock_guard lock(mu_);
        ++version_;
        for (auto& w : waiters_) {
            auto timer = w;
            asio::post(timer->get_executor(), [timer] { timer->cancel(); });
        }
        waiters_.clear();
    }
    asio::awaitable<bool> wait(std::uint64_t seen, clock::time_point deadline) {
        auto ex = co_await asio::this_coro::executor;
        auto timer = std::make_shared<asio::steady_timer>(ex, deadline);
        {
            std::lock_guard lock(mu_);
            if (version_ != seen) {
                co_return true;
            }
            waiters_.push_back(timer);
        }
        boost::system::error_code ec;  // operation_aborted: notified
        co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        std::lock_guard lock(mu_);
        waiters_.remove(timer);
        co_return version_ != seen;
    }

  private:
    mutable std::mutex mu_;
    std::uint64_t version_ = 0;
    std::list<std::shared_ptr<asio::steady_timer>> waiters_;
};

api::assignment_state state_of(const group_member::state& s) {
    api::assignment_state out;
    out.stable = s.stable;
    out.generation = s.generation;
    out.member_id = s.member_id;
    for (const auto& [topic, parts] : s.partitions) {
        for (auto p : parts) {
            out.partitions.push_back(api::topic_partition{topic, p});
        }
    }
    std::sort(out.partitions.begin(), out.partitions.end());
    out.topics = s.topics;
    return out;
}

api::offset_spec reset_spec(api::offset_reset r) {
    return api::offset_spec{r == api::offset_reset::earliest ? api::offset_spec::kind::earliest
                                                             : api::offset_spec::kind::latest,
                            -1};
}

class broker_consumer;
asio::awaitable<void> revoke_through(std::weak_ptr<broker_consumer> weak,
                                     group_member::state held);

class broker_consumer final : public api::consumer,
                              public std::enable_shared_from_this<broker_consumer> {
  public:
    broker_consumer(api::topics& topics, api::records& records, api::groups& groups,
                    api::consumer_options opts, asio::any_io_executor ex)
        : topics_(topics),
          records_(records),
          groups_(groups),
          opts_(std::move(opts)),
          ex_(std::move(ex)) {}

    ~broker_consumer() override {
        if (member_) {
            member_->stop(!opts_.instance_id.has_value());
        }
    }

    // --- what it reads ----------------------------------------------------------------------
    void subscribe(std::vector<topic_name> topics) override {
        if (auto m = ensure_member()) {
            clear_manual();
            m->subscribe(std::move(topics));
        }
    }

    bool subscribe_pattern(const std::string& pattern, api::topic_filter filter) override {
        auto m = ensure_member();
        if (!m) {
            return false;
        }
        if (!m->subscribe_pattern(pattern, std::move(filter))) {
            return false;
        }
        clear_manual();
        return true;
    }

    void unsubscribe() override {
        std::shared_ptr<group_member> m;
        {
            std::lock_guard lock(mu_);
            m = member_;
            manual_.clear();
            positions_.clear();
        }
        if (m) {
            m->unsubscribe();
        }
        announce();
    }

    std::vector<topic_name> subscribed_topics() const override {
        auto m = member();
        return m ? m->subscribed_topics() : std::vector<topic_name>{};
    }

    std::optional<std::string> subscribed_pattern() const override {
        auto m = member();
        return m ? m->subscribed_pattern() : std::nullopt;
    }

    void assign(std::vector<api::topic_partition> parts) override {
        std::sort(parts.begin(), parts.end());
        parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
        std::shared_ptr<group_member> m;
        {
            std::lock_guard lock(mu_);
            m = member_;
            std::erase_if(positions_, [&](const auto& kv) {
                return !std::binary_search(parts.begin(), parts.end(), kv.first);
            });
            manual_ = std::move(parts);
            manual_mode_ = true;
        }
        if (m && (!m->subscribed_topics().empty() || m->subscribed_pattern())) {
            m->unsubscribe();
        }
        announce();
    }

    api::assignment_state assignment() const override {
        std::shared_ptr<group_member> m;
        {
            std::lock_guard lock(mu_);
            if (manual_mode_ || !member_) {
                api::assignment_state s;
                s.partitions = manual_;
                return s;
            }
            m = member_;
        }
        return state_of(m->snapshot());
    }

    void on_change(std::function<void()> fn) override {
        std::lock_guard lock(mu_);
        on_change_ = std::move(fn);
    }

    void on_revoke(revoke_hook hook) override {
        std::lock_guard lock(mu_);
        revoke_ = std::move(hook);
    }

    // --- positions --------------------------------------------------------------------------
    void seek(std::vector<std::pair<api::topic_partition, offset>> to) override {
        std::lock_guard lock(mu_);
        for (auto& [tp, off] : to) {
            positions_[tp] = offset(std::max<std::int64_t>(off.value, 0));
        }
    }

    asio::awaitable<api::backend_result<void>> seek_to(std::vector<api::topic_partition> parts,
                                                       api::offset_spec spec) override {
        const bool by_time = spec.what == api::offset_spec::kind::timestamp;
        std::vector<api::offset_query> queries;
        for (const auto& tp : parts) {
            queries.push_back({tp.topic, tp.partition, spec});
            if (by_time) {
                queries.push_back({tp.topic, tp.partition, reset_spec(api::offset_reset::latest)});
            }
        }
        const std::size_t per = by_time ? 2 : 1;
        auto found = co_await records_.list_offsets(std::move(queries), opts_.isolation);
        if (found.size() != per * parts.size()) {
            co_return api::backend_failure(api::errc::unknown,
                                           "list_offsets answered the wrong count");
        }
        std::map<api::topic_partition, offset> at;
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const auto& f = found[per * i];
            if (f.error) {
                co_return api::backend_failure(f.error);
            }
            // No record at or after the time: the end of the partition.
            at[parts[i]] = by_time && f.off.value < 0 ? found[per * i + 1].off : f.off;
        }
        std::lock_guard lock(mu_);
        for (const auto& [tp, off] : at) {
            positions_[tp] = offset(std::max<std::int64_t>(off.value, 0));
        }
        co_return api::backend_result<void>{};
    }

    std::map<api::topic_partition, offset> positions() const override {
        const auto held = assignment().partitions;
        std::lock_guard lock(mu_);
        std::map<api::topic_partition, offset> out;
        for (const auto& tp : held) {
            if (auto it = positions_.find(tp); it != positions_.end()) {
                out.emplace(tp, it->second);
            }
        }
        return out;
    }

    // --- reading ----------------------------------------------------------------------------
    asio::awaitable<api::backend_result<std::vector<api::polled_partition>>> poll(
        api::poll_limits limits, const api::message_sink& sink) override;

    // --- commits ----------------------------------------------------------------------------
    asio::awaitable<api::backend_result<std::vector<api::offset_commit>>> commit(
        std::optional<std::vector<api::offset_commit>> offsets) override;
    asio::awaitable<api::backend_result<std::vector<api::committed_offset>>> committed(
        std::vector<api::topic_partition> parts) override;

    // --- lifecycle --------------------------------------------------------------------------
    void close(bool leave) override {
        std::shared_ptr<group_member> m;
        {
            std::lock_guard lock(mu_);
            if (closing_) {
                return;
            }
            closing_ = true;
            m = member_;
        }
        if (m) {
            m->stop(leave);
        }
        announce();
    }

    bool closed() const override {
        auto m = member();
        std::lock_guard lock(mu_);
        return closing_ && (!m || m->done());
    }

    /// The member's revoke hook: the owner's hook, then the revoked partitions' positions go
    /// (the next assignment starts from the group's commits), except at close or once the
    /// consumer reads partitions assigned by hand.
    asio::awaitable<void> revoke(group_member::state held) {
        revoke_hook hook;
        {
            std::lock_guard lock(mu_);
            hook = revoke_;
        }
        const auto state = state_of(held);
        if (hook) {
            co_await hook(state);
        }
        std::lock_guard lock(mu_);
        if (!closing_ && !manual_mode_) {
            for (const auto& tp : state.partitions) {
                positions_.erase(tp);
            }
        }
    }

  private:
    std::shared_ptr<group_member> member() const {
        std::lock_guard lock(mu_);
        return member_;
    }

    /// The group member, started on first use; null without a group.
    std::shared_ptr<group_member> ensure_member() {
        if (!opts_.group) {
            return nullptr;
        }
        std::shared_ptr<group_member> m;
        {
            std::lock_guard lock(mu_);
            if (member_) {
                return member_;
            }
            group_member::options o;
            o.group = *opts_.group;
            o.instance_id = opts_.instance_id;
            o.session_timeout_ms = opts_.session_timeout_ms;
            o.client = opts_.client;
            member_ = std::make_shared<group_member>(groups_, topics_, ex_, std::move(o));
            m = member_;
        }
        std::weak_ptr<broker_consumer> weak = weak_from_this();
        m->set_revoke_hook([weak](const group_member::state& held) {
            return revoke_through(weak, held);
        });
        m->set_change_hook([weak] {
            if (auto self = weak.lock()) {
                self->announce();
            }
        });
        m->start();
        return m;
    }

    void clear_manual() {
        {
            std::lock_guard lock(mu_);
            if (!manual_mode_) {
                return;
            }
            manual_mode_ = false;
            manual_.clear();
            positions_.clear();
        }
        announce();
    }

    /// Wakes parked polls and runs the owner's on_change on the consumer's executor.
    void announce() {
        changed_.notify();
        std::function<void()> fn;
        {
            std::lock_guard lock(mu_);
            fn = on_change_;
        }
        if (fn) {
            asio::post(ex_, std::move(fn));
        }
    }

    /// Whether the assignment comes from group membership (and is empty while it is unstable).
    bool member_managed() const {
        std::lock_guard lock(mu_);
        return member_ && !manual_mode_;
    }

    /// The group's committed offsets of `parts` (those with a commit).
    asio::awaitable<api::backend_result<std::map<api::topic_partition, api::committed_offset>>>
    fetch_committed(std::vector<api::topic_partition> parts);

    api::topics& topics_;
    api::records& records_;
    api::groups& groups_;
    const api::consumer_options opts_;
    asio::any_io_executor ex_;

    mutable std::mutex mu_;
    std::shared_ptr<group_member> member_;
    bool manual_mode_ = false;
    std::vector<api::topic_partition> manual_;  // sorted
    std::map<api::topic_partition, offset> positions_;
    std::function<void()> on_change_;
    revoke_hook revoke_;
    bool closing_ = false;
    consumer_signal changed_;
};

asio::awaitable<void> revoke_through(std::weak_ptr<broker_consumer> weak,
                                     group_member::state held) {
    if (auto self = weak.lock()) {
        co_await self->revoke(std::move(held));
    }
}

asio::awaitable<api::backend_result<std::map<api::topic_partition, api::committed_offset>>>
broker_consumer::fetch_committed(std::vector<api::topic_partition> parts) {
    std::map<api::topic_partition, api::committed_offset> out;
    api::offset_fetch_request req;
    req.group_id = *opts_.group;
    std::map<topic_name, std::vector<partition_id>> by_topic;
    for (const auto& tp : parts) {
        by_topic[tp.topic].push_back(tp.partition);
    }
    std::vector<api::topic_partition_list> topics;
    for (auto& [t, ps] : by_topic) {
        topics.push_back(api::topic_partition_list{t, std::move(ps)});
    }
    req.topics = std::move(topics);
    std::vector<api::offset_fetch_request> reqs;
    reqs.push_back(std::move(req));
    auto res = co_await groups_.fetch_offsets(std::move(reqs));
    if (res.empty()) {
        co_return api::backend_failure(api::errc::unknown,
                                       "fetch_offsets answered nothing");
    }
    if (res[0].error) {
        co_return api::backend_failure(res[0].error);
    }
    for (const auto& t : res[0].topics) {
        for (const auto& p : t.partitions) {
            if (!p.error && p.committed.value >= 0) {
                out[{t.topic, p.partition}] =
                    api::committed_offset{{t.topic, p.partition}, p.committed, p.metadata};
            }
        }
    }
    co_return out;
}

asio::awaitable<api::backend_result<std::vector<api::polled_partition>>> broker_consumer::poll(
    api::poll_limits limits, const api::message_sink& sink) {
    const auto deadline = clock::now() + limits.max_wait;
    std::vector<api::polled_partition> out;
    const auto seen = changed_.version();
    const auto held = assignment();
    if (member_managed() && (!held.stable || held.partitions.empty())) {
        // Rebalancing, or nothing assigned yet: wait for the next assignment.
        co_await changed_.wait(seen, deadline);
        co_return out;
    }
    if (held.partitions.empty()) {
        co_return out;
    }

    // Positions: a seek's, else the group's commit, else the reset policy.
    std::map<api::topic_partition, api::backend_error> failed;
    std::vector<api::topic_partition> missing;
    {
        std::lock_guard lock(mu_);
        for (const auto& tp : held.partitions) {
            if (!positions_.contains(tp)) {
                missing.push_back(tp);
            }
        }
    }
    std::map<api::topic_partition, offset> found;
    if (!missing.empty() && opts_.group) {
        auto committed = co_await fetch_committed(missing);
        if (!committed) {
            co_return api::backend_failure(committed.error());
        }
        for (const auto& [tp, c] : *committed) {
            found[tp] = c.next;
        }
        std::erase_if(missing, [&](const auto& tp) { return found.contains(tp); });
    }
    if (!missing.empty()) {
        if (opts_.reset == api::offset_reset::none) {
            for (const auto& tp : missing) {
                failed[tp] = api::backend_error(
                    make_error_code(api::errc::offset_out_of_range),
                    "no committed offset and no reset policy for " + tp.topic.value + "-" +
                        std::to_string(tp.partition.value));
            }
        } else {
            std::vector<api::offset_query> queries;
            for (const auto& tp : missing) {
                queries.push_back({tp.topic, tp.partition, reset_spec(opts_.reset)});
            }
            auto offsets = co_await records_.list_offsets(std::move(queries), opts_.isolation);
            for (std::size_t i = 0; i < missing.size(); ++i) {
                if (i >= offsets.size()) {
                    failed[missing[i]] = api::errc::unknown;
                } else if (offsets[i].error) {
                    failed[missing[i]] = offsets[i].error;
                } else {
                    found[missing[i]] = offset(std::max<std::int64_t>(offsets[i].off.value, 0));
                }
            }
        }
    }

    std::vector<read_position> pos;
    {
        std::lock_guard lock(mu_);
        for (const auto& [tp, off] : found) {
            positions_.emplace(tp, off);  // a seek that came meanwhile wins
        }
        for (const auto& tp : held.partitions) {
            if (auto it = positions_.find(tp); it != positions_.end() && !failed.contains(tp)) {
                pos.push_back({tp.topic, tp.partition, it->second});
            }
        }
    }
    read_limits rl;
    // A partition that could not be positioned is reported at once, as Kafka's poll throws
    // NoOffsetForPartition: the fetch does not park then.
    rl.max_wait = failed.empty() ? std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
                                       deadline - clock::now(), clock::duration::zero()))
                                 : std::chrono::milliseconds(0);
    rl.min_bytes = limits.min_bytes;
    rl.max_bytes = limits.max_bytes;
    rl.partition_max_bytes = limits.partition_max_bytes;
    rl.isolation = opts_.isolation;
    auto inner = [&](std::size_t i, const protocol::kafka::record_view& r) {
        return sink(pos[i].topic, pos[i].partition, r);
    };
    std::vector<partition_read> reads;
    if (!pos.empty()) {
        reads = co_await read_records(records_, pos, rl, inner);
    }

    // Positions advance only where nothing moved them meanwhile (a seek, a rebalance).
    std::map<api::topic_partition, api::polled_partition> outcome;
    {
        std::lock_guard lock(mu_);
        for (std::size_t i = 0; i < reads.size() && i < pos.size(); ++i) {
            const api::topic_partition tp{pos[i].topic, pos[i].partition};
            const auto& r = reads[i];
            api::polled_partition pp;
            pp.tp = tp;
            pp.next = r.next;
            pp.high_watermark = r.high_watermark;
            pp.log_start = r.log_start;
            auto it = positions_.find(tp);
            const bool current = it != positions_.end() && it->second == pos[i].next;
            if (r.error && api::reason(r.error) == api::errc::offset_out_of_range &&
                opts_.reset != api::offset_reset::none) {
                // The reset policy moves an out-of-range position (not the committed offset:
                // it is what went out of range, or older).
                const auto to = opts_.reset == api::offset_reset::earliest
                                    ? std::max<std::int64_t>(r.log_start.value, 0)
                                    : std::max<std::int64_t>(r.high_watermark.value, 0);
                if (current) {
                    it->second = offset(to);
                }
                pp.next = offset(to);
            } else if (r.error) {
                pp.error = api::backend_error(r.error);
                pp.next = pos[i].next;
            } else if (current) {
                it->second = r.next;
            }
            outcome[tp] = std::move(pp);
        }
    }
    for (auto& [tp, e] : failed) {
        api::polled_partition pp;
        pp.tp = tp;
        pp.error = std::move(e);
        pp.next = offset(-1);
        outcome[tp] = std::move(pp);
    }
    out.reserve(outcome.size());
    for (auto& [tp, pp] : outcome) {
        out.push_back(std::move(pp));
    }
    co_return out;
}

asio::awaitable<api::backend_result<std::vector<api::offset_commit>>> broker_consumer::commit(
    std::optional<std::vector<api::offset_commit>> offsets) {
    if (!opts_.group) {
        co_return api::backend_failure(make_error_code(api::errc::invalid_request),
                                       "a consumer without a group cannot commit");
    }
    const auto held = assignment();
    const bool managed = member_managed();
    if (managed && !held.stable) {
        co_return api::backend_failure(make_error_code(api::errc::rebalance_in_progress),
                                       "the group is rebalancing");
    }
    std::vector<api::offset_commit> what;
    if (offsets) {
        what = std::move(*offsets);
    } else {
        for (const auto& [tp, off] : positions()) {
            what.push_back(api::offset_commit{tp, off, std::nullopt});
        }
    }
    if (what.empty()) {
        co_return what;
    }
    api::offset_commit_request req;
    req.group_id = *opts_.group;
    if (managed) {
        req.generation_id_or_member_epoch = held.generation;
        req.member_id = held.member_id;
        req.group_instance_id = opts_.instance_id;
    }
    std::map<topic_name, std::vector<api::commit_partition>> by_topic;
    for (const auto& c : what) {
        api::commit_partition cp;
        cp.partition = c.tp.partition;
        cp.committed = c.next;
        cp.metadata = c.metadata;
        by_topic[c.tp.topic].push_back(std::move(cp));
    }
    for (auto& [t, parts] : by_topic) {
        req.topics.push_back(api::commit_topic{t, std::move(parts)});
    }
    auto res = co_await groups_.commit_offsets(std::move(req));
    for (const auto& t : res.topics) {
        for (const auto& p : t.partitions) {
            if (p.error) {
                co_return api::backend_failure(p.error);
            }
        }
    }
    co_return what;
}

asio::awaitable<api::backend_result<std::vector<api::committed_offset>>>
broker_consumer::committed(std::vector<api::topic_partition> parts) {
    if (!opts_.group) {
        co_return api::backend_failure(make_error_code(api::errc::invalid_request),
                                       "a consumer without a group has no commits");
    }
    if (parts.empty()) {
        parts = assignment().partitions;
    }
    std::vector<api::committed_offset> out;
    if (parts.empty()) {
        co_return out;
    }
    auto found = co_await fetch_committed(parts);
    if (!found) {
        co_return api::backend_failure(found.error());
    }
    for (const auto& tp : parts) {
        auto it = found->find(tp);
        out.push_back(it != found->end() ? it->second
                                         : api::committed_offset{tp, offset(-1), std::nullopt});
    }
    co_return out;
}

}  // namespace

std::shared_ptr<api::consumer> open_broker_consumer(api::topics& topics, api::records& records,
                                                    api::groups& groups,
                                                    api::consumer_options opts,
                                                    boost::asio::any_io_executor ex) {
    return std::make_shared<broker_consumer>(topics, records, groups, std::move(opts),
                                             std::move(ex));
}

}  // namespace sluice::backend::client
