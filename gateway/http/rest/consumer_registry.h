// Every REST consumer instance of this sluice, by group and name (owned by gateway/http/rest):
// creates and deletes them, expires idle ones (consumer.instance.timeout.ms), keeps them in the
// consumer_store and restores them at start-up.
//
//   start(): load the store --> restore every instance (rejoining its group) --> ready
//            expiry loop: every second, instances idle past the timeout leave and are erased
//   stop():  members stop without leaving (a restart finds their partitions again)
//
// Shared (upstream mode: a fleet of gateways over one cluster, behind a load balancer), an
// instance is served by one gateway at a time, the one that stored it last (the record's
// "owner", a random id per process). Each gateway follows the store topic; a request for an
// instance this gateway does not serve takes it over when the store has it: it is restored
// here from its stored state (subscription or assignment, positions) and stored with this
// gateway as owner; the gateway that served it sees that record and stops its copy (the
// member's static instance id is the same, so the group hands the partitions on; nothing
// is left to be committed twice: positions are where the client had read to). At start-up
// nothing is restored eagerly: an instance comes back on its first request. A deletion
// anywhere ends the instance everywhere. The serving gateway stores an instance again at
// least every consumer.instance.timeout.ms / 2 while it is in use; a record nobody stored for
// two timeouts (its gateway died) is erased by whichever gateway sees it so.
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
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/httpcore/async_event.h"
#include "gateway/http/rest/consumer_instance.h"
#include "gateway/http/rest/consumer_store.h"

namespace sluice::gateway::rest {

class consumer_registry {
public:
    /// `next_executor` picks the io thread of each new instance's consumer (its group work);
    /// `shared`: several gateways serve instances from the same store (upstream mode).
    consumer_registry(rest_context& rc, std::function<boost::asio::any_io_executor()> next_executor,
                      bool shared = false);
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
    /// The instance, or null (40403). Shared: an instance another gateway serves (or served)
    /// is taken over.
    boost::asio::awaitable<std::shared_ptr<consumer_instance>> find(std::string group,
                                                                    std::string name);
    /// Deletes an instance: its member leaves the group and its stored state is erased.
    boost::asio::awaitable<bool> remove(sluice::group_id group, std::string name);

private:
    using key = std::pair<std::string, std::string>;

    /// What the store says of an instance this gateway does not serve (shared only).
    struct elsewhere {
        stored_instance state;
        std::chrono::steady_clock::time_point seen;  // when its last record arrived here
    };

    boost::asio::awaitable<void> load_and_expire();
    /// Shared: follows the store from `from` (run beside the expiry loop).
    boost::asio::awaitable<void> follow(std::int64_t from);
    /// A record of the store (shared): another gateway took an instance over, or deleted it.
    void on_stored(sluice::group_id group, std::string name, std::optional<stored_instance> value);
    /// Waits (bounded) until the follower has read what the store holds now, so that a
    /// request right after another gateway's write finds it.
    boost::asio::awaitable<void> catch_up();
    /// Shared: refreshes the records of instances in use, erases the records left by gone
    /// gateways.
    boost::asio::awaitable<void> tend_shared();
    std::shared_ptr<consumer_instance> make(sluice::group_id group, std::string name,
                                            instance_config config);

    rest_context& rc_;
    std::function<boost::asio::any_io_executor()> next_executor_;
    boost::asio::any_io_executor home_;
    consumer_store store_;
    const bool shared_;
    /// This process, as the owner field of what it stores.
    const std::string self_;

    mutable std::mutex mu_;
    std::map<key, std::shared_ptr<consumer_instance>> instances_;
    /// Stopped instances whose members have not finished yet.
    std::vector<std::shared_ptr<consumer_instance>> retired_;
    std::map<key, elsewhere> elsewhere_;
    /// When this gateway last stored each of its instances (shared).
    std::map<key, std::chrono::steady_clock::time_point> stored_at_;
    std::unique_ptr<boost::asio::steady_timer> timer_;
    std::atomic<bool> loaded_{false};
    std::atomic<bool> stopping_{false};
    std::atomic<bool> loop_running_{false};
    std::atomic<bool> follow_running_{false};
    async_event loaded_event_;
    /// The follower's position (shared), and its changes.
    std::atomic<std::int64_t> followed_{-1};
    async_event followed_event_;
};

}  // namespace sluice::gateway::rest
