#include "backend/queue/client_backing.h"

#include <algorithm>
#include <stdexcept>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "backend/logger.h"
#include "protocol/kafka/record_batch.h"
#include "protocol/kafka/record_batch_builder.h"

namespace sluice::backend::queue {
namespace asio = boost::asio;
namespace kafka = protocol::kafka;

namespace {

api::topic_description describe_from_info(const api::topic_info& t) {
    api::topic_description d;
    d.name = t.name;
    d.id = t.id;
    d.partitions = static_cast<std::int32_t>(t.partitions.size());
    d.internal = t.internal;
    return d;
}

bool cluster_unreachable(const api::backend_error& e) {
    const auto r = api::reason(e.code);
    return r == api::errc::backend_unavailable || r == api::errc::request_timed_out;
}

asio::awaitable<void> pause_for(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

/// The key of a consumer pool: the topic and its partition list.
std::string pool_key(const api::fetch_topic& ft) {
    std::vector<std::int32_t> parts;
    for (const auto& p : ft.partitions) {
        parts.push_back(p.partition.value);
    }
    std::sort(parts.begin(), parts.end());
    std::string key = ft.topic.value;
    for (auto p : parts) {
        key += fmt::format("/{}", p);
    }
    return key;
}

/// Rebuilds polled records of one partition as v2 batches, one per run of consecutive
/// offsets; an empty commit marker at next-1 covers offsets the consumer skipped at the end.
class batch_rebuilder {
public:
    void add(const kafka::record_view& r) {
        if (builder_.record_count() > 0 && r.offset != last_ + 1) {
            seal();
        }
        if (builder_.record_count() == 0) {
            base_ = r.offset;
        }
        headers_.clear();
        for (const auto& h : r.headers) {
            headers_.push_back(h);
        }
        builder_.add(kafka::new_record{r.key, r.value, headers_, r.timestamp});
        last_ = r.offset;
    }
    /// The batches; `next` is the consumer's position after them.
    protocol::byte_buffer finish(std::int64_t next) {
        seal();
        if (next > last_ + 1 && next > 0) {
            auto marker = kafka::build_control_batch(kafka::control_record_type::commit, -1, -1,
                                                     0, 0);
            if (marker) {
                kafka::set_base_offset(marker->mutable_view(), next - 1);
                out_.append(marker->view());
            }
        }
        return std::move(out_);
    }
    bool empty() const { return out_.size() == 0 && builder_.record_count() == 0; }
    std::int64_t last() const { return last_; }
    void start_at(std::int64_t from) { last_ = from - 1; }

private:
    void seal() {
        if (builder_.record_count() == 0) {
            return;
        }
        auto batch = builder_.finish();
        if (batch) {
            kafka::set_base_offset(batch->mutable_view(), base_);
            out_.append(batch->view());
        }
    }
    kafka::record_batch_builder builder_;
    std::vector<kafka::header_view> headers_;
    protocol::byte_buffer out_;
    std::int64_t base_ = 0;
    std::int64_t last_ = -1;
};

}  // namespace

// --- client_topics ------------------------------------------------------------------------------

api::awaitable<std::optional<api::topic_description>> client_topics::describe(topic_name name) {
    const auto deadline = std::chrono::steady_clock::now() + patience_;
    for (;;) {
        auto got = co_await admin_.describe_topic(name);
        if (got) {
            co_return describe_from_info(*got);
        }
        if (api::reason(got.error().code) == api::errc::unknown_topic_or_partition) {
            co_return std::nullopt;
        }
        if (!cluster_unreachable(got.error()) || std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error(fmt::format("cannot describe topic {}: {}", name.value,
                                                 got.error().code.message()));
        }
        co_await pause_for(std::chrono::milliseconds(500));
    }
}

api::awaitable<std::optional<api::topic_description>> client_topics::describe(uuid id) {
    auto all = co_await list();
    for (auto& t : all) {
        if (!id.is_zero() && t.id == id) {
            co_return std::move(t);
        }
    }
    co_return std::nullopt;
}

api::awaitable<std::vector<api::topic_description>> client_topics::list() {
    std::vector<api::topic_description> out;
    auto got = co_await admin_.list_topics();
    if (!got) {
        queue_log().warn("upstream topics cannot be listed: {}", got.error().code.message());
        co_return out;
    }
    for (const auto& t : *got) {
        out.push_back(describe_from_info(t));
    }
    co_return out;
}

api::awaitable<api::backend_result<api::created_topic>> client_topics::create(api::new_topic spec) {
    auto got = co_await admin_.create_topic(std::move(spec));
    if (!got) {
        co_return api::backend_failure(got.error());
    }
    api::created_topic out;
    out.topic = describe_from_info(*got);
    co_return out;
}

api::awaitable<api::backend_result<void>> client_topics::remove(topic_name name) {
    co_return co_await admin_.delete_topic(std::move(name));
}

api::awaitable<api::backend_result<void>> client_topics::create_partitions(topic_name name,
                                                                           std::int32_t total,
                                                                           bool validate_only) {
    if (validate_only) {
        co_return api::backend_failure(make_error_code(api::errc::unsupported),
                                       "validate_only is not served over the client level");
    }
    co_return co_await admin_.create_partitions(std::move(name), total);
}

api::awaitable<api::backend_result<std::vector<api::config_entry>>> client_topics::describe_configs(
    topic_name name) {
    co_return co_await admin_.describe_topic_configs(std::move(name));
}

api::awaitable<api::backend_result<void>> client_topics::replace_configs(
    topic_name, std::map<std::string, std::string>, bool) {
    co_return api::backend_failure(make_error_code(api::errc::unsupported),
                                   "replacing every config is not served over the client level");
}

api::awaitable<api::backend_result<void>> client_topics::alter_configs(
    topic_name name, std::vector<api::config_change> changes, bool validate_only) {
    co_return co_await admin_.alter_topic_configs(std::move(name), std::move(changes),
                                                  validate_only);
}

api::backend_result<void> client_topics::set_dynamic_configs(api::dynamic_broker_configs, bool) {
    return api::backend_failure(make_error_code(api::errc::unsupported),
                                "dynamic broker configs are the cluster's");
}

api::awaitable<api::storage_description> client_topics::describe_storage(std::vector<topic_name>) {
    co_return api::storage_description{};
}

// --- client_records -----------------------------------------------------------------------------

client_records::client_records(api::client& client, std::chrono::milliseconds point_read_wait)
    : client_(client), point_read_wait_(point_read_wait), work_(io_.get_executor()),
      thread_([this] { io_.run(); }) {}

void client_records::stop() {
    std::vector<consumer_ptr> all;
    {
        std::lock_guard lock(mu_);
        if (stopped_) {
            return;
        }
        stopped_ = true;
        for (auto& w : opened_) {
            if (auto c = w.lock()) {
                all.push_back(std::move(c));
            }
        }
    }
    for (auto& c : all) {
        c->close(false);  // a poll in progress returns
    }
    std::unique_lock lock(mu_);
    if (!idle_cv_.wait_for(lock, std::chrono::seconds(3), [this] { return active_ == 0; })) {
        queue_log().warn("{} queue fetches still running at shutdown", active_);
    }
}

client_records::~client_records() {
    stop();
    std::vector<consumer_ptr> all;
    {
        std::lock_guard lock(mu_);
        for (auto& w : opened_) {
            if (auto c = w.lock()) {
                all.push_back(std::move(c));
            }
        }
        idle_.clear();
    }
    // Bounded (shutdown must end): a consumer still closing is left to the client's teardown.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    for (auto& c : all) {
        c->close(false);  // those opened after stop()
        while (!c->closed() && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        if (!c->closed()) {
            queue_log().warn("a queue consumer had not closed by shutdown");
            break;
        }
    }
    all.clear();
    work_.reset();
    io_.stop();
    thread_.join();
}

client_records::consumer_ptr client_records::take(const std::string& key,
                                                  const api::fetch_topic& ft) {
    {
        std::lock_guard lock(mu_);
        auto& idle = idle_[key];
        if (!idle.empty()) {
            auto c = std::move(idle.back());
            idle.pop_back();
            return c;
        }
    }
    api::consumer_options o;
    o.reset = api::offset_reset::none;
    o.isolation = api::isolation::read_committed;
    o.client.client_id = "sluice-queues";
    auto c = client_.open_consumer(std::move(o), io_.get_executor());
    std::vector<api::topic_partition> parts;
    for (const auto& p : ft.partitions) {
        parts.push_back({ft.topic, p.partition});
    }
    std::sort(parts.begin(), parts.end());
    c->assign(std::move(parts));
    std::lock_guard lock(mu_);
    std::erase_if(opened_, [](const auto& w) { return w.expired(); });
    opened_.push_back(c);
    return c;
}

void client_records::give_back(const std::string& key, consumer_ptr c) {
    std::lock_guard lock(mu_);
    idle_[key].push_back(std::move(c));
}

namespace {

/// One answer per requested partition, every one carrying `error`.
template <typename TopicOut, typename PartitionOut, typename TopicsIn>
std::vector<TopicOut> every_partition_refused(const TopicsIn& topics,
                                              const api::backend_error& error) {
    std::vector<TopicOut> out;
    for (const auto& t : topics) {
        TopicOut to;
        to.topic = t.topic;
        for (const auto& p : t.partitions) {
            PartitionOut po;
            po.partition = p.partition;
            po.error = error;
            to.partitions.push_back(std::move(po));
        }
        out.push_back(std::move(to));
    }
    return out;
}

}  // namespace

api::awaitable<api::produce_result> client_records::produce(api::produce_request req) {
    api::produce_result out;
    out.topics = every_partition_refused<api::produced_topic, api::produced_partition>(
        req.topics, {make_error_code(api::errc::unsupported),
                     "the queue service produces through api::producer here"});
    co_return out;
}

api::awaitable<api::fetch_result> client_records::fetch(api::fetch_request req) {
    api::fetch_result out;
    {
        std::lock_guard lock(mu_);
        if (stopped_) {
            out.topics = every_partition_refused<api::fetched_topic, api::fetched_partition>(
                req.topics, {make_error_code(api::errc::backend_unavailable), "stopping"});
            co_return out;
        }
        ++active_;
    }
    struct active_guard {
        client_records* self;
        ~active_guard() {
            std::lock_guard lock(self->mu_);
            if (--self->active_ == 0) {
                self->idle_cv_.notify_all();
            }
        }
    } guard{this};
    for (const auto& ft : req.topics) {
        api::fetched_topic result_topic;
        result_topic.topic = ft.topic;
        const std::string key = pool_key(ft);
        auto c = take(key, ft);
        // Seek where the request's offsets differ from the consumer's positions.
        const auto at = c->positions();
        std::vector<std::pair<api::topic_partition, offset>> seeks;
        std::map<std::int32_t, batch_rebuilder> built;
        for (const auto& p : ft.partitions) {
            const api::topic_partition tp{ft.topic, p.partition};
            auto it = at.find(tp);
            if (it == at.end() || it->second != p.fetch_offset) {
                seeks.emplace_back(tp, p.fetch_offset);
            }
            built[p.partition.value].start_at(p.fetch_offset.value);
        }
        if (!seeks.empty()) {
            c->seek(std::move(seeks));
        }
        api::poll_limits limits;
        limits.max_wait = req.max_wait.count() > 0 ? req.max_wait : point_read_wait_;
        limits.min_bytes = std::max<std::int32_t>(req.min_bytes, 1);
        limits.max_bytes = req.max_bytes;
        limits.partition_max_bytes = ft.partitions.empty() ? 1048576
                                                           : ft.partitions.front().max_bytes;
        auto polled = co_await c->poll(
            limits, [&](const topic_name&, partition_id p, const kafka::record_view& r) {
                auto it = built.find(p.value);
                if (it != built.end()) {
                    it->second.add(r);
                }
                return true;
            });
        std::map<std::int32_t, api::polled_partition> outcome;
        if (polled) {
            for (auto& pp : *polled) {
                outcome[pp.tp.partition.value] = pp;
            }
        }
        for (const auto& p : ft.partitions) {
            api::fetched_partition fp;
            fp.partition = p.partition;
            if (!polled) {
                fp.error = polled.error();
                result_topic.partitions.push_back(std::move(fp));
                continue;
            }
            auto it = outcome.find(p.partition.value);
            auto& b = built[p.partition.value];
            std::int64_t next = b.last() + 1;
            if (it != outcome.end()) {
                fp.error = it->second.error;
                fp.high_watermark = it->second.high_watermark;
                fp.last_stable_offset = it->second.high_watermark;
                fp.log_start_offset = it->second.log_start;
                next = std::max(next, it->second.next.value);
            }
            auto bytes = b.finish(next);
            if (bytes.size() > 0) {
                fp.records = protocol::kafka::records::copy_of(bytes.view());
            }
            result_topic.partitions.push_back(std::move(fp));
        }
        give_back(key, std::move(c));
        out.topics.push_back(std::move(result_topic));
    }
    co_return out;
}

api::awaitable<std::vector<api::found_offset>> client_records::list_offsets(
    std::vector<api::offset_query> queries, api::isolation isolation) {
    co_return co_await client_.admin().list_offsets(std::move(queries), isolation);
}

api::awaitable<std::vector<api::backend_result<offset>>> client_records::delete_records(
    std::vector<api::delete_records_request> reqs) {
    co_return co_await client_.admin().delete_records(std::move(reqs));
}

}  // namespace sluice::backend::queue
