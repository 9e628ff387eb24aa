#include "gateway/http/rest/consumer_registry.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/httpcore/logger.h"
#include "protocol/core/uuid.h"

namespace sluice::gateway::rest {
namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

namespace {

/// Logs what ended a background coroutine of the registry.
void log_failure(std::exception_ptr e, const char* what) {
    if (!e) {
        return;
    }
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        http_log().error("REST consumers: {} failed: {}", what, ex.what());
    }
}

}  // namespace

consumer_registry::consumer_registry(rest_context& rc,
                                     std::function<asio::any_io_executor()> next_executor,
                                     bool shared)
    : rc_(rc),
      next_executor_(std::move(next_executor)),
      home_(next_executor_()),
      store_(*rc.client, home_),
      shared_(shared),
      self_(uuid::random().to_string()) {}

consumer_registry::~consumer_registry() = default;

void consumer_registry::start() {
    timer_ = std::make_unique<asio::steady_timer>(home_);
    loop_running_ = true;
    asio::co_spawn(home_, load_and_expire(), [this](std::exception_ptr e) {
        log_failure(e, "background work");
        loop_running_ = false;
        loaded_ = true;
        loaded_event_.notify();
    });
}

void consumer_registry::stop() {
    stopping_ = true;
    if (timer_) {
        asio::post(home_, [this] { timer_->cancel(); });
    }
    std::lock_guard lock(mu_);
    for (auto& [k, inst] : instances_) {
        inst->stop(false);  // keep the partitions for the restarted sluice
    }
}

std::size_t consumer_registry::pending() const {
    std::lock_guard lock(mu_);
    std::size_t n = (loop_running_ ? 1 : 0) + (follow_running_ ? 1 : 0);
    for (const auto& [k, inst] : instances_) {
        n += inst->done() ? 0 : 1;
    }
    for (const auto& inst : retired_) {
        n += inst->done() ? 0 : 1;
    }
    return n;
}

asio::awaitable<bool> consumer_registry::ready(clock::time_point deadline) {
    for (;;) {
        const auto seen = loaded_event_.version();
        if (loaded_) {
            co_return true;
        }
        const bool changed = co_await loaded_event_.wait(seen, deadline);
        if (!changed) {
            co_return loaded_.load();
        }
    }
}

std::shared_ptr<consumer_instance> consumer_registry::make(sluice::group_id group,
                                                           std::string name,
                                                           instance_config config) {
    auto inst = std::make_shared<consumer_instance>(rc_, next_executor_(), std::move(group),
                                                    std::move(name), config);
    const consumer_instance* self = inst.get();
    inst->set_persist([this, self](stored_instance s) -> asio::awaitable<void> {
        if (shared_) {
            // A copy this gateway no longer serves (another took it over) stores nothing:
            // its record would take the instance back.
            {
                std::lock_guard lock(mu_);
                const key k{s.group.value, s.name};
                auto it = instances_.find(k);
                if (it == instances_.end() || it->second.get() != self) {
                    co_return;
                }
                stored_at_[k] = clock::now();
            }
            s.owner = self_;
        }
        co_await store_.save(std::move(s));
    });
    return inst;
}

asio::awaitable<std::variant<std::shared_ptr<consumer_instance>, error>>
consumer_registry::create(sluice::group_id group, std::string name, instance_config config) {
    if (shared_) {
        co_await catch_up();
    }
    std::shared_ptr<consumer_instance> inst;
    {
        std::lock_guard lock(mu_);
        const key k{group.value, name};
        if (instances_.contains(k) || elsewhere_.contains(k)) {
            co_return error{code::consumer_already_exists, std::string(already_exists_message)};
        }
        inst = make(group, name, config);
        instances_.emplace(k, inst);
    }
    co_await inst->save();
    co_return inst;
}

asio::awaitable<std::shared_ptr<consumer_instance>> consumer_registry::find(std::string group,
                                                                            std::string name) {
    const key k{std::move(group), std::move(name)};
    for (int attempt = 0;; ++attempt) {
        std::shared_ptr<consumer_instance> taken;
        {
            std::lock_guard lock(mu_);
            if (auto it = instances_.find(k); it != instances_.end()) {
                it->second->touch();
                co_return it->second;
            }
            if (auto it = elsewhere_.find(k); it != elsewhere_.end() && !stopping_) {
                // Served by another gateway (or by one that is gone): serve it here from
                // where its store record says it was.
                const stored_instance state = it->second.state;
                elsewhere_.erase(it);
                taken = make(state.group, state.name, state.config);
                taken->restore(state);
                instances_.emplace(k, taken);
                http_log().info("REST consumers: instance {} of group {} taken over from "
                                "gateway {}",
                                k.second, k.first,
                                state.owner.empty() ? std::string("(unnamed)") : state.owner);
            }
        }
        if (taken) {
            co_await taken->save();  // with this gateway as owner: the other copy stops
            co_return taken;
        }
        if (!shared_ || attempt > 0) {
            co_return nullptr;
        }
        // Another gateway may have just created it: read the store to its end, look again.
        co_await catch_up();
    }
}

asio::awaitable<bool> consumer_registry::remove(sluice::group_id group, std::string name) {
    if (shared_) {
        bool here = false;
        {
            std::lock_guard lock(mu_);
            here = instances_.contains({group.value, name});
        }
        if (!here) {
            co_await catch_up();  // another gateway may have just created it
        }
    }
    std::shared_ptr<consumer_instance> inst;
    {
        std::lock_guard lock(mu_);
        const key k{group.value, name};
        auto it = instances_.find(k);
        if (it == instances_.end()) {
            // Served elsewhere: its tombstone ends it there.
            if (elsewhere_.erase(k) == 0) {
                co_return false;
            }
        } else {
            inst = it->second;
            instances_.erase(it);
            stored_at_.erase(k);
            std::erase_if(retired_, [](const auto& i) { return i->done(); });
            retired_.push_back(inst);
        }
    }
    if (inst) {
        inst->stop(true);
    }
    co_await store_.erase(std::move(group), std::move(name));
    co_return true;
}

void consumer_registry::on_stored(sluice::group_id group, std::string name,
                                  std::optional<stored_instance> value) {
    std::shared_ptr<consumer_instance> ended;
    {
        std::lock_guard lock(mu_);
        const key k{group.value, name};
        if (value && value->owner == self_) {
            return;  // this gateway's own record
        }
        if (auto it = instances_.find(k); it != instances_.end()) {
            ended = it->second;
            instances_.erase(it);
            stored_at_.erase(k);
            std::erase_if(retired_, [](const auto& i) { return i->done(); });
            retired_.push_back(ended);
        }
        if (value) {
            elsewhere_[k] = elsewhere{std::move(*value), clock::now()};
        } else {
            elsewhere_.erase(k);
        }
    }
    if (ended) {
        http_log().info("REST consumers: instance {} of group {} {} another gateway", name,
                        group.value, value ? "taken over by" : "deleted through");
        // Without leaving: the gateway serving it now joined under the same static instance
        // id and holds the member's place (a deleted instance's member times out).
        ended->stop(false);
    }
}

asio::awaitable<void> consumer_registry::catch_up() {
    const auto deadline = clock::now() + std::chrono::seconds(2);
    const auto end = co_await store_.end(deadline);
    if (!end || *end <= 0) {
        co_return;
    }
    for (;;) {
        const auto seen = followed_event_.version();
        if (followed_ >= *end || !follow_running_) {
            co_return;
        }
        if (!co_await followed_event_.wait(seen, deadline)) {
            co_return;
        }
    }
}

asio::awaitable<void> consumer_registry::follow(std::int64_t from) {
    followed_ = from;
    co_await store_.follow(
        from,
        [this](sluice::group_id group, std::string name, std::optional<stored_instance> value) {
            on_stored(std::move(group), std::move(name), std::move(value));
        },
        [this](std::int64_t next) {
            if (next != followed_) {
                followed_ = next;
                followed_event_.notify();
            }
        },
        [this] { return stopping_.load(); });
}

asio::awaitable<void> consumer_registry::tend_shared() {
    const auto timeout = rc_.settings.consumer_instance_timeout;
    const auto now = clock::now();
    std::vector<std::shared_ptr<consumer_instance>> refresh;
    std::vector<key> gone;
    {
        std::lock_guard lock(mu_);
        for (const auto& [k, inst] : instances_) {
            auto at = stored_at_.find(k);
            if (at == stored_at_.end() || now - at->second >= timeout / 2) {
                refresh.push_back(inst);
            }
        }
        for (auto it = elsewhere_.begin(); it != elsewhere_.end();) {
            if (now - it->second.seen >= 2 * timeout) {
                gone.push_back(it->first);
                it = elsewhere_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& inst : refresh) {
        co_await inst->save();
    }
    for (auto& k : gone) {
        http_log().info("REST consumers: instance {} of group {} erased: no gateway has served "
                        "it for two instance timeouts",
                        k.second, k.first);
        co_await store_.erase(sluice::group_id(k.first), k.second);
    }
}

asio::awaitable<void> consumer_registry::load_and_expire() {
    auto stored = co_await store_.load();
    if (shared_) {
        // Nothing is restored eagerly: another gateway may be serving any of these.
        {
            std::lock_guard lock(mu_);
            const auto now = clock::now();
            for (auto& s : stored.instances) {
                key k{s.group.value, s.name};
                elsewhere_[std::move(k)] = elsewhere{std::move(s), now};
            }
        }
        follow_running_ = true;
        asio::co_spawn(home_, follow(stored.next), [this](std::exception_ptr e) {
            log_failure(e, "following the store");
            follow_running_ = false;
            followed_event_.notify();
        });
    } else {
        // Restore what the store holds, then tell waiting requests.
        std::lock_guard lock(mu_);
        for (auto& s : stored.instances) {
            const key k{s.group.value, s.name};
            if (instances_.contains(k)) {
                continue;
            }
            auto inst = make(s.group, s.name, s.config);
            inst->restore(s);
            instances_.emplace(k, std::move(inst));
        }
        if (!stored.instances.empty()) {
            http_log().info("REST consumers: {} instances restored", stored.instances.size());
        }
    }
    loaded_ = true;
    loaded_event_.notify();

    // Expire idle instances.
    const auto tick = std::min(std::chrono::milliseconds(1000),
                               std::max(std::chrono::milliseconds(10),
                                        rc_.settings.consumer_instance_timeout / 4));
    while (!stopping_) {
        timer_->expires_after(tick);
        boost::system::error_code ec;
        co_await timer_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (stopping_) {
            break;
        }
        std::vector<key> idle;
        {
            std::lock_guard lock(mu_);
            const auto now = clock::now();
            for (const auto& [k, inst] : instances_) {
                if (inst->expired(now)) {
                    idle.push_back(k);
                }
            }
        }
        for (auto& k : idle) {
            http_log().info("REST consumers: instance {} of group {} expired", k.second, k.first);
            co_await remove(sluice::group_id(k.first), k.second);
        }
        if (shared_) {
            co_await tend_shared();
        }
    }
}

}  // namespace sluice::gateway::rest
