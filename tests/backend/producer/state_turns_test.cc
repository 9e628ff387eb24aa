// producer_state_manager turns: a partition's state is loaded on the loader executor, never on
// the caller's, and the callers waiting for it take their turns in the order they asked.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "tests/backend/producer/producer_test_support.h"

namespace sluice::backend::producer::test {
namespace {

using turn = producer_state_manager::turn;

/// Waits for a turn and parks it in `*slot`, recording `index` in `*order` when granted.
boost::asio::awaitable<void> take_turn(producer_state_manager* states,
                                       std::shared_ptr<log::partition_log> log,
                                       boost::asio::any_io_executor loader, int index,
                                       std::vector<int>* order, std::optional<turn>* slot) {
    auto t = co_await states->wait_turn(std::move(log), std::move(loader));
    EXPECT_TRUE(t);
    if (t) {
        order->push_back(index);
        *slot = std::move(*t);
    }
}

TEST_F(ProducerTest, StateLoadsOnTheLoaderExecutorNotTheCallers) {
    boost::asio::io_context io;      // the caller: an io thread of a front
    boost::asio::io_context loader;  // where loads may run
    std::vector<int> order;
    std::optional<turn> held;
    boost::asio::co_spawn(io, take_turn(states.get(), part(), loader.get_executor(), 0, &order,
                                        &held),
                          boost::asio::detached);
    io.poll();
    EXPECT_TRUE(order.empty()) << "the state was loaded on the caller's thread";
    EXPECT_EQ(states->ready_state(part()), nullptr);

    loader.poll();  // the load
    io.poll();      // the caller resumes on its own executor
    ASSERT_EQ(order, std::vector<int>{0});
    ASSERT_TRUE(held);
    EXPECT_EQ(states->ready_state(part()), nullptr) << "ready while a turn is held";

    held.reset();
    EXPECT_NE(states->ready_state(part()), nullptr);
}

TEST_F(ProducerTest, TurnsAreGrantedInTheOrderOfTheCalls) {
    boost::asio::io_context io;
    boost::asio::io_context loader;
    std::vector<int> order;
    std::optional<turn> held[3];
    for (int i = 0; i < 3; ++i) {
        boost::asio::co_spawn(io, take_turn(states.get(), part(), loader.get_executor(), i,
                                            &order, &held[i]),
                              boost::asio::detached);
    }
    io.poll();
    loader.poll();
    io.poll();
    EXPECT_EQ(order, std::vector<int>{0}) << "a later caller got in while the first held on";
    held[0].reset();
    io.poll();
    EXPECT_EQ(order, (std::vector<int>{0, 1}));
    held[1].reset();
    io.poll();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(states->ready_state(part()), nullptr);
    held[2].reset();
    ASSERT_NE(states->ready_state(part()), nullptr);

    // Once ready, a turn is granted at once and holds no place.
    io.restart();  // it ran out of work above
    std::optional<turn> later;
    boost::asio::co_spawn(io, take_turn(states.get(), part(), loader.get_executor(), 3, &order,
                                        &later),
                          boost::asio::detached);
    io.poll();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(loader.poll(), 0u) << "a ready state was loaded again";
}

TEST_F(ProducerTest, ATurnSeesTheStateOfTheLogItWaitedFor) {
    ASSERT_TRUE(produce(producer_batch(7, 0, 0, 3)));
    reopen();  // the state must now be rebuilt from the log
    boost::asio::io_context io;
    boost::asio::io_context loader;
    std::vector<int> order;
    std::optional<turn> held;
    boost::asio::co_spawn(io, take_turn(states.get(), part(), loader.get_executor(), 0, &order,
                                        &held),
                          boost::asio::detached);
    io.poll();
    loader.poll();
    io.poll();
    ASSERT_TRUE(held);
    auto e = held->state().entry(7);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->last_seq(), 2);
}

}  // namespace
}  // namespace sluice::backend::producer::test
