#include <gtest/gtest.h>

#include "backend/io/memory_file_system.h"
#include "backend/log/sparse_index.h"

namespace sluice::backend::log {
namespace {

class SparseIndexTest : public ::testing::Test {
protected:
    std::shared_ptr<io::memory_file_system> fs = std::make_shared<io::memory_file_system>();
    std::shared_ptr<io::file_cache> cache = std::make_shared<io::file_cache>(fs, 16);
    sparse_index make(index_kind k = index_kind::offset) {
        return sparse_index(k, offset(100), cache, k == index_kind::offset ? "s.index" : "s.ti");
    }
};

TEST_F(SparseIndexTest, FloorFindsLastEntryAtOrBeforeKeyInFileAndTail) {
    auto idx = make();
    for (int i = 0; i < 10; ++i) {
        idx.append({100 + i * 10, i * 1000});
    }
    ASSERT_TRUE(idx.persist_below(5000));  // entries 0..4 to the file, 5..9 stay in memory

    EXPECT_EQ(idx.size(), 10u);
    EXPECT_FALSE(idx.floor(99, false)->has_value());
    EXPECT_EQ(idx.floor(100, false)->value(), (index_entry{100, 0}));
    EXPECT_EQ(idx.floor(135, false)->value(), (index_entry{130, 3000}));
    EXPECT_EQ(idx.floor(140, true)->value(), (index_entry{130, 3000}));
    EXPECT_EQ(idx.floor(150, false)->value(), (index_entry{150, 5000}));
    EXPECT_EQ(idx.floor(1000, false)->value(), (index_entry{190, 9000}));
}

TEST_F(SparseIndexTest, BinarySearchOverLargeFile) {
    auto idx = make();
    for (int i = 0; i < 20000; ++i) {
        idx.append({100 + i * 3, i * 100});
    }
    ASSERT_TRUE(idx.persist_below(20000 * 100));
    for (int probe : {0, 1, 4095, 4096, 12345, 19999}) {
        auto e = idx.floor(100 + probe * 3 + 2, false);
        ASSERT_TRUE(e && *e);
        EXPECT_EQ((*e)->value, probe * 100) << probe;
    }
}

TEST_F(SparseIndexTest, PersistWritesOnlyEntriesBelowTheLimit) {
    auto idx = make();
    idx.append({100, 0});
    idx.append({110, 4096});
    ASSERT_TRUE(idx.persist_below(4096));

    sparse_index reloaded(index_kind::offset, offset(100), cache, "s.index");
    auto l = reloaded.load(10000);
    ASSERT_TRUE(l);
    EXPECT_TRUE(l->found);
    EXPECT_FALSE(l->header.sealed);
    EXPECT_EQ(l->entries, 1u);
}

TEST_F(SparseIndexTest, LoadCutsEntriesOutOfOrderOrPastTheLog) {
    auto idx = make();
    idx.append({100, 0});
    idx.append({120, 100});
    idx.append({130, 50});  // position goes backwards
    idx.append({140, 5000});
    ASSERT_TRUE(idx.persist_below(1 << 30));

    sparse_index reloaded(index_kind::offset, offset(100), cache, "s.index");
    auto l = reloaded.load(1000);
    ASSERT_TRUE(l);
    EXPECT_TRUE(l->damaged);
    EXPECT_EQ(l->entries, 2u);
    EXPECT_EQ(reloaded.last(), (index_entry{120, 100}));
}

TEST_F(SparseIndexTest, SealedFileIsTrustedAndCarriesTheSegmentSummary) {
    auto idx = make(index_kind::time);
    idx.append({1000, 100});
    idx.append({2000, 105});
    index_header h{true, 777, 9, 2500, 7};
    ASSERT_TRUE(idx.write_sealed(h));

    sparse_index reloaded(index_kind::time, offset(100), cache, "s.ti");
    auto l = reloaded.load(777);
    ASSERT_TRUE(l);
    EXPECT_TRUE(l->found);
    EXPECT_TRUE(l->header.sealed);
    EXPECT_EQ(l->header.log_size, 777u);
    EXPECT_EQ(l->header.next_delta, 9u);
    EXPECT_EQ(l->header.max_timestamp, 2500);
    EXPECT_EQ(reloaded.floor(2000, true)->value(), (index_entry{1000, 100}));
}

TEST_F(SparseIndexTest, DamagedHeaderIsReported) {
    auto idx = make();
    idx.append({100, 0});
    ASSERT_TRUE(idx.write_sealed(index_header{true, 10, 1, -1, 0}));
    auto f = fs->open("s.index", io::open_mode::read_write);
    std::byte junk{0x5a};
    ASSERT_TRUE((*f)->write_at({&junk, 1}, 9));

    sparse_index reloaded(index_kind::offset, offset(100), cache, "s.index");
    auto l = reloaded.load(10);
    ASSERT_TRUE(l);
    EXPECT_TRUE(l->damaged);
    EXPECT_FALSE(l->found);
}

TEST_F(SparseIndexTest, TruncateDropsEntriesAtOrPastTheLimit) {
    auto idx = make();
    for (int i = 0; i < 6; ++i) {
        idx.append({100 + i, i * 10});
    }
    ASSERT_TRUE(idx.persist_below(30));
    ASSERT_TRUE(idx.truncate_values_from(20));
    EXPECT_EQ(idx.size(), 2u);
    EXPECT_EQ(idx.last(), (index_entry{101, 10}));
}

}  // namespace
}  // namespace sluice::backend::log
