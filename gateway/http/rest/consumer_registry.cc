#include "gateway/http/rest/consumer_registry.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/httpcore/logger.h"

namespace sluice::gateway::rest {
namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

consumer_registry::consumer_registry(rest_context& rc,
                                     std::function<asio::any_io_executor()> next_executor)
    : rc_(rc),
      next_executor_(std::move(next_executor)),
      home_(next_executor_()),
      store_(*rc.client, home_) {}

consumer_registry::~consumer_registry() = default;

void consumer_registry::start() {
    timer_ = std::make_unique<asio::steady_timer>(home_);
    loop_running_ = true;
    asio::co_spawn(home_, load_and_expire(), [this](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                http_log().error("REST consumers: background work failed: {}", ex.what());
            }
        }
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
    std::size_t n = loop_running_ ? 1 : 0;
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
    inst->set_persist([store = &store_](stored_instance s) { return store->save(std::move(s)); });
    return inst;
}

asio::awaitable<std::variant<std::shared_ptr<consumer_instance>, error>>
consumer_registry::create(sluice::group_id group, std::string name, instance_config config) {
    std::shared_ptr<consumer_instance> inst;
    {
        std::lock_guard lock(mu_);
        const key k{group.value, name};
        if (instances_.contains(k)) {
            co_return error{code::consumer_already_exists, std::string(already_exists_message)};
        }
        inst = make(group, name, config);
        instances_.emplace(k, inst);
    }
    co_await inst->save();
    co_return inst;
}

std::shared_ptr<consumer_instance> consumer_registry::find(const std::string& group,
                                                           const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = instances_.find({group, name});
    if (it == instances_.end()) {
        return nullptr;
    }
    it->second->touch();
    return it->second;
}

asio::awaitable<bool> consumer_registry::remove(sluice::group_id group, std::string name) {
    std::shared_ptr<consumer_instance> inst;
    {
        std::lock_guard lock(mu_);
        auto it = instances_.find({group.value, name});
        if (it == instances_.end()) {
            co_return false;
        }
        inst = it->second;
        instances_.erase(it);
        std::erase_if(retired_, [](const auto& i) { return i->done(); });
        retired_.push_back(inst);
    }
    inst->stop(true);
    co_await store_.erase(std::move(group), std::move(name));
    co_return true;
}

asio::awaitable<void> consumer_registry::load_and_expire() {
    // Restore what the store holds, then tell waiting requests.
    auto stored = co_await store_.load();
    {
        std::lock_guard lock(mu_);
        for (auto& s : stored) {
            const key k{s.group.value, s.name};
            if (instances_.contains(k)) {
                continue;
            }
            auto inst = make(s.group, s.name, s.config);
            inst->restore(s);
            instances_.emplace(k, std::move(inst));
        }
    }
    if (!stored.empty()) {
        http_log().info("REST consumers: {} instances restored", stored.size());
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
    }
}

}  // namespace sluice::gateway::rest
