// What the tests of backend/upstream share: a fixture that runs the client level's calls on
// an io_context of the test's thread, and plain librdkafka clients (a reader of a partition, a
// consumer group member) that check the client level against what the cluster holds.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <librdkafka/rdkafka.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "backend/api/client.h"
#include "backend/upstream/upstream_client.h"
#include "tests/backend/run_io.h"
#include "tests/backend/upstream/mock_cluster.h"

namespace sluice::backend::upstream::test {

/// A record as a plain librdkafka consumer read it.
struct read_record {
    std::int32_t partition = -1;
    std::int64_t offset = -1;
    std::optional<std::string> key;
    std::optional<std::string> value;
    std::int64_t timestamp = -1;
    std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

/// Reads `count` records of `topic`/`partition` from the start with a plain librdkafka
/// consumer (at most `limit`; fewer when they do not come).
std::vector<read_record> read_partition(const std::string& bootstrap, const std::string& topic,
                                        std::int32_t partition, std::size_t count,
                                        std::chrono::milliseconds limit = std::chrono::seconds(15));

/// A plain librdkafka consumer that joined `group` subscribed to `topic`; leaves on
/// destruction.
class group_member {
  public:
    group_member(const std::string& bootstrap, const std::string& group, const std::string& topic);
    ~group_member();
    group_member(const group_member&) = delete;
    group_member& operator=(const group_member&) = delete;

    /// Polls until the member holds partitions (at most `limit`); false when it does not.
    bool wait_for_assignment(std::chrono::milliseconds limit = std::chrono::seconds(20));
    /// Commits `next` for `partition` of the topic synchronously.
    bool commit(std::int32_t partition, std::int64_t next);

  private:
    rd_kafka_t* rk_ = nullptr;
    std::string topic_;
};

/// A fixture over the shared mock cluster: `open()` makes a client level, `run()` drives one
/// of its calls to completion on the test's io_context.
class UpstreamTest : public ::testing::Test {
  protected:
    void SetUp() override { io_ = std::make_unique<boost::asio::io_context>(); }
    void TearDown() override {
        client_.reset();
        io_.reset();
    }

    mock_cluster& cluster() { return shared_mock_cluster(); }

    /// A client level over the mock cluster with `extra` properties.
    api::client& open(std::map<std::string, std::string> extra = {},
                      std::chrono::milliseconds request_timeout = std::chrono::seconds(10),
                      std::shared_ptr<api::log_dirs_reader> log_dirs = nullptr) {
        upstream_options opts;
        opts.properties = std::move(extra);
        opts.properties.emplace("bootstrap.servers", cluster().bootstrap());
        opts.request_timeout = request_timeout;
        opts.log_dirs = std::move(log_dirs);
        client_ = make_upstream_client(std::move(opts));
        return *client_;
    }

    /// Runs `a` on the io_context until it completes (at most 20 s).
    template <typename T>
    T run(boost::asio::awaitable<T> a) {
        return backend::test::run_io(*io_, std::move(a), std::chrono::seconds(20),
                                     "a client call");
    }

    /// Runs the io_context until `done()` holds; false after `limit`.
    template <typename Pred>
    bool run_until(Pred done, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
        return backend::test::run_io_until(*io_, std::move(done), limit);
    }

    std::unique_ptr<boost::asio::io_context> io_;
    std::unique_ptr<api::client> client_;
};

}  // namespace sluice::backend::upstream::test
