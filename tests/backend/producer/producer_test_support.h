// A log on the in-memory file system with a manual clock, the producer state manager and the
// transaction coordinator over it, and batch builders for idempotent and transactional data.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/io/memory_file_system.h"
#include "backend/log/log_manager.h"
#include "backend/producer/errc.h"
#include "backend/producer/producer_state_manager.h"
#include "backend/producer/transaction_coordinator.h"
#include "protocol/kafka/record_batch_builder.h"
#include "tests/backend/support.h"

namespace sluice::backend::producer::test {

/// One batch of `count` records from producer `pid`/`epoch` starting at sequence `seq`.
inline std::vector<std::byte> producer_batch(std::int64_t pid, std::int16_t epoch,
                                             std::int32_t seq, int count = 1,
                                             bool transactional = false) {
    protocol::kafka::batch_options o;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.base_sequence = seq;
    o.transactional = transactional;
    protocol::kafka::record_batch_builder b(o);
    for (int i = 0; i < count; ++i) {
        std::string v = "v" + std::to_string(i);
        b.add(std::nullopt, protocol::as_bytes(v), 1'700'000'000'000);
    }
    auto out = b.finish();
    EXPECT_TRUE(out);
    auto v = out->view();
    return {v.begin(), v.end()};
}

class ProducerTest : public ::testing::Test {
protected:
    std::shared_ptr<io::memory_file_system> fs = std::make_shared<io::memory_file_system>();
    backend::test::manual_clock clock;
    std::unique_ptr<log::log_manager> log;
    std::unique_ptr<producer_state_manager> states;
    std::unique_ptr<transaction_coordinator> txn;
    txn_settings tsettings;

    void SetUp() override {
        open();
        ASSERT_TRUE(log->create_topic("t", 2, {}));
    }
    void TearDown() override { close(); }

    void open() {
        log::log_options o;
        o.data_dir = "/data";
        o.fs = fs;
        o.clock = clock.fn();
        o.retention_check_interval = std::chrono::milliseconds(0);
        o.compaction_check_interval = std::chrono::milliseconds(0);
        o.flush_threads = 1;
        auto m = log::log_manager::open(o);
        ASSERT_TRUE(m) << m.error().message();
        log = std::move(*m);
        states = std::make_unique<producer_state_manager>(*log, fs, producer_state_settings{},
                                                          clock.fn());
        states->start(false);
        txn = std::make_unique<transaction_coordinator>(*log, *states, tsettings,
                                                        txn_clock{clock.fn()});
        ASSERT_TRUE(txn->load());
        backend::test::run_until_done(recover_wrapper());
    }
    boost::asio::awaitable<bool> recover_wrapper() {
        co_await txn->recover();
        co_return true;
    }
    boost::asio::awaitable<bool> timers() {
        co_await txn->run_timers();
        co_return true;
    }
    void close() {
        txn.reset();
        if (states) {
            states->stop();
        }
        states.reset();
        if (log) {
            log->close();
        }
        log.reset();
    }
    void reopen() {
        close();
        open();
    }

    std::shared_ptr<log::partition_log> part(int p = 0) {
        return log->partition("t", partition_id(p));
    }
    std::shared_ptr<partition_producer_state> state(int p = 0) {
        auto s = states->state_for(part(p));
        EXPECT_TRUE(s);
        return s ? *s : nullptr;
    }

    /// Appends through the producer state, as the produce path does.
    result<log::append_result> produce(std::vector<std::byte> batch, int p = 0,
                                       bool verified = false) {
        auto st = state(p);
        append_guard guard(*st, verified);
        log::append_options o;
        o.now_ms = clock.now();
        o.validator = &guard;
        return part(p)->append(batch, o);
    }

    /// A transactional append through the coordinator's verification.
    std::error_code produce_txn(const std::string& id, std::int64_t pid, std::int16_t epoch,
                                std::int32_t seq, int p = 0, bool implicit = false) {
        auto batch = producer_batch(pid, epoch, seq, 1, true);
        auto st = state(p);
        std::error_code append_error;
        auto ec = txn->verify_for_produce(
            id, pid, epoch, {"t", p}, implicit,
            [&] {
                append_guard guard(*st, true);
                log::append_options o;
                o.now_ms = clock.now();
                o.validator = &guard;
                auto r = part(p)->append(batch, o);
                if (!r) {
                    append_error = r.error();
                }
            },
            nullptr, nullptr);
        return ec ? ec : append_error;
    }

    template <typename T>
    T run(boost::asio::awaitable<T> a) {
        return backend::test::run_until_done(std::move(a));
    }
};

}  // namespace sluice::backend::producer::test
