// Helpers shared by the backend tests: batches with known content, a manual clock, running a
// coroutine to completion, flattening records.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "backend/log/log_manager.h"
#include "protocol/core/bytes.h"
#include "protocol/kafka/codec.h"

namespace sluice::backend::test {

struct test_record {
    std::optional<std::string> key;
    std::optional<std::string> value;
    std::int64_t timestamp = 0;
};

/// One uncompressed v2 batch holding `records` (base offset 0, valid CRC).
std::vector<std::byte> make_batch(const std::vector<test_record>& records,
                                  std::int64_t producer_id = -1);
/// A batch of `count` records whose values are `value_size` copies of `fill`, all at `ts`.
std::vector<std::byte> make_batch(int count, std::size_t value_size, std::int64_t ts,
                                  char fill = 'x');
/// The records of an uncompressed batch.
std::vector<test_record> decode_records(protocol::bytes_view batch);
/// Offsets of each record of an uncompressed batch.
std::vector<std::int64_t> record_offsets(protocol::bytes_view batch);
/// The bytes of records (memory chunks copied, file regions read).
std::vector<std::byte> flatten(const protocol::kafka::records& r);
/// Splits concatenated batches.
std::vector<protocol::bytes_view> split_batches(protocol::bytes_view bytes);

/// A clock tests move by hand.
class manual_clock {
public:
    explicit manual_clock(std::int64_t start = 1'700'000'000'000) : now_(start) {}
    std::int64_t now() const { return now_.load(); }
    void advance(std::int64_t ms) { now_ += ms; }
    void set(std::int64_t ms) { now_ = ms; }
    log::clock_fn fn() {
        return [this] { return now_.load(); };
    }

private:
    std::atomic<std::int64_t> now_;
};

/// Runs `a` on a fresh io_context until it completes and returns its value.
template <typename T>
T run_until_done(boost::asio::awaitable<T> a) {
    boost::asio::io_context io;
    std::optional<T> out;
    std::exception_ptr error;
    boost::asio::co_spawn(io, std::move(a), [&](std::exception_ptr e, T v) {
        error = e;
        if (!e) {
            out.emplace(std::move(v));
        }
    });
    io.run();
    if (error) {
        std::rethrow_exception(error);
    }
    return std::move(*out);
}

/// Runs `a` on `io` (one the test drives itself) until it completes, at most 20 s (a call that
/// never completes fails the test instead of hanging it); rethrows what it threw.
template <typename T>
T run_on(boost::asio::io_context& io, boost::asio::awaitable<T> a) {
    std::optional<T> out;
    std::exception_ptr error;
    boost::asio::co_spawn(io, std::move(a), [&](std::exception_ptr e, T v) {
        error = e;
        if (!e) {
            out.emplace(std::move(v));
        }
    });
    io.restart();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!out && !error && std::chrono::steady_clock::now() < deadline) {
        io.run_one_for(std::chrono::milliseconds(100));
    }
    if (error) {
        std::rethrow_exception(error);
    }
    EXPECT_TRUE(out) << "the call did not complete";
    return std::move(*out);
}

/// Appends with acks=all semantics: append, then flush_to the end of the appended batches.
result<log::append_result> append_durably(log::partition_log& p, std::vector<std::byte> batch,
                                          std::int64_t now_ms);

}  // namespace sluice::backend::test
