// The backend conformance suite's harness: what a backend factory provides, the typed fixture
// every contract test derives from, and helpers that speak backend/api and the Kafka record
// format only. Nothing here (or in any *_contract_test.cc) knows an implementation: a factory
// (native_factory.h) is the one place that does, and contract_backends.h lists the factories.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "backend/api/backend.h"
#include "backend/api/queues.h"
#include "backend/api/transactions.h"
#include "protocol/core/bytes.h"
#include "protocol/kafka/record_batch.h"
#include "tests/backend/run_io.h"

namespace sluice::backend::contract {

/// One opened backend, as a factory hands it out: the interfaces every backend has, and the
/// capabilities (transactions, queues) that only some provide. Destroying it releases the
/// backend without making anything durable that was not already (the fixture calls stop and
/// close first).
class backend_under_test {
public:
    virtual ~backend_under_test() = default;
    virtual api::backend& backend() = 0;
    /// Null when the backend does not provide the capability; tests that need it skip.
    virtual api::transactions* transactions() = 0;
    virtual api::queues* queues() = 0;
};

/// A backend factory: default-constructed once per test, it owns the backend's data (a data
/// dir, an in-memory file system, a cluster) for the test's whole life, so that open() after
/// a close finds what the previous instance made durable.
template <typename F>
concept backend_factory = std::default_initializable<F> && requires(F f) {
    { F::name } -> std::convertible_to<std::string_view>;
    { f.open() } -> std::same_as<std::unique_ptr<backend_under_test>>;
};

/// Prints the factory's name in test names (BackendContract/native.Something).
struct factory_names {
    template <typename F>
    static std::string GetName(int) {
        return std::string(F::name);
    }
};

/// One record of a fetch answer, decoded, with what its batch says about it.
struct fetched_record {
    std::int64_t offset = 0;
    std::int64_t timestamp = 0;
    std::optional<std::string> key;
    std::optional<std::string> value;
    std::int64_t producer_id = -1;
    bool transactional = false;
    bool control = false;
    bool log_append_time = false;
};

/// Idempotent and transactional producer fields of a batch.
struct producer_fields {
    std::int64_t id = -1;
    std::int16_t epoch = -1;
    std::int32_t base_sequence = -1;
    bool transactional = false;
};

/// One uncompressed v2 batch of `values` (no keys), each record at `timestamp_ms`.
protocol::byte_buffer make_batch(const std::vector<std::string>& values,
                                 std::int64_t timestamp_ms = 1'700'000'000'000,
                                 producer_fields producer = {});
/// One batch of `count` records of `value_bytes` bytes each.
protocol::byte_buffer make_sized_batch(int count, std::size_t value_bytes,
                                       std::int64_t timestamp_ms = 1'700'000'000'000);

/// Every record of fetched batches, control records included, in log order.
std::vector<fetched_record> decode_fetched(const api::fetched_partition& part);
/// The number of whole batches fetched.
std::size_t count_batches(const api::fetched_partition& part);
/// What a read_committed consumer delivers: data records, without control records and without
/// the records of the aborted transactions the answer lists (Kafka's consumer algorithm).
std::vector<std::string> committed_values(const api::fetched_partition& part);
/// The values of data (non-control) records.
std::vector<std::string> values_of(const std::vector<fetched_record>& records);

/// The wall clock in milliseconds since the epoch (record timestamps of "now").
std::int64_t now_ms();

/// What `ec` means in api terms; errc{} (0) for success, so that EXPECT_EQ prints both.
api::errc reason_of(const api::backend_error& e);

/// The typed fixture: opens a fresh backend for each test on a fresh factory, drives its
/// awaitables on an io_context of this thread, and can close and reopen the backend on the
/// same data.
template <backend_factory Factory>
class BackendContract : public ::testing::Test {
protected:
    void SetUp() override { open(); }
    void TearDown() override { shut(); }

    void open() {
        be_ = factory_.open();
        io_ = std::make_unique<boost::asio::io_context>();
        be_->backend().start(io_->get_executor());
    }

    /// Shuts down as a server does: stop, stop the io, close; then the coroutine frames still
    /// parked (they may refer to the backend) go before the backend does.
    void shut() {
        if (!be_) {
            return;
        }
        be_->backend().stop();
        io_->stop();
        be_->backend().close();
        io_.reset();
        be_.reset();
    }

    /// Closes the backend and opens it again on the same data.
    void reopen() {
        shut();
        open();
    }

    api::topics& topics() { return be_->backend().topics(); }
    api::records& records() { return be_->backend().records(); }
    api::groups& groups() { return be_->backend().groups(); }
    api::transactions* transactions() { return be_->transactions(); }
    api::queues* queues() { return be_->queues(); }

    /// Runs `a` on the io_context until it completes (at most 20 s; a call that does not
    /// complete fails the test).
    template <typename T>
    T run(boost::asio::awaitable<T> a) {
        return test::run_io(*io_, std::move(a), std::chrono::seconds(20), "a backend call");
    }

    /// Starts `a` without waiting; the returned slot fills when it completes (drive the
    /// io_context with run() or run_until()).
    template <typename T>
    std::shared_ptr<std::optional<T>> spawn(boost::asio::awaitable<T> a) {
        auto out = std::make_shared<std::optional<T>>();
        boost::asio::co_spawn(*io_, std::move(a), [out](std::exception_ptr e, T v) {
            if (!e) {
                out->emplace(std::move(v));
            }
        });
        return out;
    }

    /// Runs the io_context until `done()` holds; false after 20 s.
    template <typename Pred>
    bool run_until(Pred done) {
        return test::run_io_until(*io_, std::move(done));
    }

    // --- topics --------------------------------------------------------------------------

    api::backend_result<api::created_topic> try_create(
        const std::string& name, std::int32_t partitions,
        std::map<std::string, std::string> configs = {}, bool validate_only = false) {
        api::new_topic spec;
        spec.name = topic_name(name);
        spec.partitions = partitions;
        spec.configs = std::move(configs);
        spec.validate_only = validate_only;
        return run(topics().create(std::move(spec)));
    }

    void create_topic(const std::string& name, std::int32_t partitions = 1,
                      std::map<std::string, std::string> configs = {}) {
        auto r = try_create(name, partitions, std::move(configs));
        ASSERT_TRUE(r) << name << ": " << r.error().code.message() << " " << r.error().message;
    }

    std::optional<api::config_entry> config_of(const std::string& topic,
                                               const std::string& name) {
        auto r = run(topics().describe_configs(topic_name(topic)));
        if (!r) {
            ADD_FAILURE() << "describe_configs " << topic << ": " << r.error().code.message();
            return std::nullopt;
        }
        for (auto& e : *r) {
            if (e.name == name) {
                return e;
            }
        }
        return std::nullopt;
    }

    // --- records -------------------------------------------------------------------------

    /// Produces one partition's batches and answers that partition's result.
    api::produced_partition produce(const std::string& topic, std::int32_t partition,
                                    protocol::byte_buffer& batches,
                                    std::optional<std::string> txn_id = std::nullopt) {
        api::produce_request req;
        api::produce_topic t;
        t.topic = topic_name(topic);
        t.partitions.push_back({partition_id(partition), batches.mutable_view()});
        req.topics.push_back(std::move(t));
        req.acks = api::acks::all;
        if (txn_id) {
            req.txn_id = transactional_id(*txn_id);
        }
        auto r = run(records().produce(std::move(req)));
        if (r.topics.size() != 1 || r.topics[0].partitions.size() != 1) {
            ADD_FAILURE() << "produce answered " << r.topics.size() << " topics";
            return {};
        }
        return r.topics[0].partitions[0];
    }

    /// Produces `values` as one batch; answers its base offset (-1 and a failure on error).
    std::int64_t produce_values(const std::string& topic, std::int32_t partition,
                                const std::vector<std::string>& values,
                                std::int64_t timestamp_ms = 1'700'000'000'000) {
        auto batch = make_batch(values, timestamp_ms);
        auto r = produce(topic, partition, batch);
        EXPECT_FALSE(r.error) << topic << "/" << partition << ": " << r.error.text();
        return r.base_offset.value;
    }

    /// Fetches one partition, not waiting for data.
    api::fetched_partition fetch(const std::string& topic, std::int32_t partition,
                                 std::int64_t from, std::int32_t max_bytes = 1048576,
                                 api::isolation isolation = api::isolation::read_uncommitted) {
        api::fetch_request req;
        api::fetch_topic t;
        t.topic = topic_name(topic);
        t.partitions.push_back({partition_id(partition), offset(from), max_bytes});
        req.topics.push_back(std::move(t));
        req.min_bytes = 0;
        req.max_wait = std::chrono::milliseconds(0);
        req.isolation = isolation;
        auto r = run(records().fetch(std::move(req)));
        if (r.topics.size() != 1 || r.topics[0].partitions.size() != 1) {
            ADD_FAILURE() << "fetch answered " << r.topics.size() << " topics";
            return {};
        }
        return std::move(r.topics[0].partitions[0]);
    }

    api::found_offset list_offset(const std::string& topic, std::int32_t partition,
                                  api::offset_spec spec,
                                  api::isolation isolation = api::isolation::read_uncommitted) {
        std::vector<api::offset_query> q;
        q.push_back({topic_name(topic), partition_id(partition), spec});
        auto r = run(records().list_offsets(std::move(q), isolation));
        if (r.size() != 1) {
            ADD_FAILURE() << "list_offsets answered " << r.size() << " offsets";
            return {};
        }
        return r[0];
    }

    std::int64_t earliest(const std::string& topic, std::int32_t partition = 0) {
        return list_offset(topic, partition, {api::offset_spec::kind::earliest, -1}).off.value;
    }
    std::int64_t latest(const std::string& topic, std::int32_t partition = 0,
                        api::isolation isolation = api::isolation::read_uncommitted) {
        return list_offset(topic, partition, {api::offset_spec::kind::latest, -1}, isolation)
            .off.value;
    }

private:
    Factory factory_;
    std::unique_ptr<backend_under_test> be_;
    std::unique_ptr<boost::asio::io_context> io_;
};

}  // namespace sluice::backend::contract
