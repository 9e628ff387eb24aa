// The client-level conformance suite's fixture (backend/api/client.h): a factory hands out an
// opened client level (the native backend's, backend/client, or a Kafka cluster's through
// librdkafka, backend/upstream); the typed fixture ClientContract<Factory> drives its calls on
// an io_context of this thread. Written against backend/api only.
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "backend/api/client.h"
#include "tests/backend/run_io.h"

namespace sluice::backend::contract {

/// One opened client level and what it stands on (a native backend, a cluster). Destroying it
/// releases everything.
class client_under_test {
public:
    virtual ~client_under_test() = default;
    virtual api::client& client() = 0;
    /// Runs background work the client needs on `ex` (the native backend's timers).
    virtual void start(boost::asio::any_io_executor ex) = 0;
    /// Stops background work before the io_context stops (the destructor releases the rest).
    virtual void stop() = 0;
};

/// A client factory: default-constructed once per test; it owns what the client stands on
/// (a data dir, a cluster) for the test's whole life.
template <typename F>
concept client_factory = std::default_initializable<F> && requires(F f) {
    { F::name } -> std::convertible_to<std::string_view>;
    { f.open() } -> std::same_as<std::unique_ptr<client_under_test>>;
};

/// The session timeout (ms) of the client suite's group members: F::session_timeout_ms when
/// the factory names one (a stand-in whose rebalances wait on it: shorter keeps them quick),
/// else 6 s.
template <typename F>
constexpr int member_session_timeout_ms() {
    if constexpr (requires { F::session_timeout_ms; }) {
        return F::session_timeout_ms;
    } else {
        return 6000;
    }
}

template <client_factory Factory>
class ClientContract : public ::testing::Test {
protected:
    void SetUp() override {
        io_ = std::make_unique<boost::asio::io_context>();
        c_ = factory_.open();
        c_->start(io_->get_executor());
    }
    void TearDown() override {
        if (!c_) {
            return;
        }
        c_->stop();
        io_->stop();
        c_.reset();
        io_.reset();
    }

    api::client& client() { return c_->client(); }
    api::producer& producer() { return c_->client().producer(); }
    api::admin& admin() { return c_->client().admin(); }
    boost::asio::any_io_executor executor() { return io_->get_executor(); }

    /// A topic name no other test uses (tests may share a cluster; the "c" keeps these apart
    /// from the names tests/backend/upstream makes on the same mock cluster).
    std::string unique_topic(std::string_view stem) {
        static std::atomic<int> n{0};
        return std::string(stem) + "-" + std::to_string(::getpid()) + "-c" +
               std::to_string(n.fetch_add(1));
    }

    /// Runs `a` on the io_context until it completes (at most 20 s; a call that does not
    /// complete fails the test).
    template <typename T>
    T run(boost::asio::awaitable<T> a) {
        return test::run_io(*io_, std::move(a), std::chrono::seconds(20), "a client call");
    }

    /// Runs the io_context until `done()` holds; false after `limit`.
    template <typename Pred>
    bool run_until(Pred done, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
        return test::run_io_until(*io_, std::move(done), limit);
    }

    Factory factory_;
    std::unique_ptr<boost::asio::io_context> io_;
    std::unique_ptr<client_under_test> c_;
};

}  // namespace sluice::backend::contract
