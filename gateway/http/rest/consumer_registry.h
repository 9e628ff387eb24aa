// Every REST consumer instance of this sluice, by group and name (owned by gateway/http/rest):
// creates and deletes them, expires idle ones (consumer.instance.timeout.ms), keeps them in the
// consumer_store and restores them at start-up.
//
//   start(): load the store --> restore every instance (rejoining its group) --> ready
//            expiry loop: every second, instances idle past the timeout leave and are erased
//   stop():  members stop without leaving (a restart finds their partitions again)
//
// Lifecycle: built by the HTTP server; start() once the io threads run, stop() at the first
// step of shutdown; pending() tells run_server when its background work has ended.
// Concurrency: thread-safe (one mutex around the map; instances guard themselves).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/httpcore/async_event.h"
#include "gateway/http/rest/consumer_instance.h"
#include "gateway/http/rest/consumer_store.h"

namespace sluice::gateway::rest {

class consumer_registry {
public:
    /// `next_executor` picks the io thread of each new instance's consumer (its group work).
    consumer_registry(rest_context& rc, std::function<boost::asio::any_io_executor()> next_executor);
    ~consumer_registry();

    void start();
    void stop();
    /// Background work (the loader, the expiry loop, consumers' group members) still running.
    std::size_t pending() const;

    /// Waits (up to `deadline`) for the stored instances to be restored; false if not yet.
    boost::asio::awaitable<bool> ready(std::chrono::steady_clock::time_point deadline);

    /// A new instance; 40902 when the group already has one of that name.
    boost::asio::awaitable<std::variant<std::shared_ptr<consumer_instance>, error>> create(
        sluice::group_id group, std::string name, instance_config config);
    /// The instance, or null (40403).
    std::shared_ptr<consumer_instance> find(const std::string& group, const std::string& name);
    /// Deletes an instance: its member leaves the group and its stored state is erased.
    boost::asio::awaitable<bool> remove(sluice::group_id group, std::string name);

private:
    using key = std::pair<std::string, std::string>;

    boost::asio::awaitable<void> load_and_expire();
    std::shared_ptr<consumer_instance> make(sluice::group_id group, std::string name,
                                            instance_config config);

    rest_context& rc_;
    std::function<boost::asio::any_io_executor()> next_executor_;
    boost::asio::any_io_executor home_;
    consumer_store store_;

    mutable std::mutex mu_;
    std::map<key, std::shared_ptr<consumer_instance>> instances_;
    /// Stopped instances whose members have not finished yet.
    std::vector<std::shared_ptr<consumer_instance>> retired_;
    std::unique_ptr<boost::asio::steady_timer> timer_;
    std::atomic<bool> loaded_{false};
    std::atomic<bool> stopping_{false};
    std::atomic<bool> loop_running_{false};
    async_event loaded_event_;
};

}  // namespace sluice::gateway::rest
