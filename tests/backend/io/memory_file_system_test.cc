#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <string>

#include "backend/io/file_cache.h"
#include "backend/io/memory_file_system.h"

namespace sluice::backend::io {
namespace {

std::span<const std::byte> bytes_of(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::string content(file_system& fs, const std::string& path) {
    auto b = read_whole_file(fs, path);
    if (!b) {
        return "<missing>";
    }
    return std::string(reinterpret_cast<const char*>(b->data()), b->size());
}

TEST(MemoryFileSystem, CrashKeepsOnlySyncedBytesOfDurableNames) {
    memory_file_system fs;
    ASSERT_TRUE(fs.create_directory("d"));
    ASSERT_TRUE(fs.sync_dir("."));
    auto f = fs.open("d/a", open_mode::create);
    ASSERT_TRUE(f);
    ASSERT_TRUE((*f)->write_at(bytes_of("hello"), 0));
    ASSERT_TRUE((*f)->sync());
    ASSERT_TRUE(fs.sync_dir("d"));
    ASSERT_TRUE((*f)->write_at(bytes_of(" world"), 5));
    auto g = fs.open("d/b", open_mode::create);  // name never synced
    ASSERT_TRUE((*g)->write_at(bytes_of("lost"), 0));
    ASSERT_TRUE((*g)->sync());

    auto after = fs.crash_copy();

    EXPECT_EQ(content(*after, "d/a"), "hello");
    EXPECT_FALSE(*after->exists("d/b"));
    EXPECT_EQ(content(fs, "d/a"), "hello world");  // the original is untouched
}

TEST(MemoryFileSystem, ANameLongerThan255BytesIsRefusedAsOnLinux) {
    memory_file_system fs;
    ASSERT_TRUE(fs.create_directory("d"));
    EXPECT_TRUE(fs.open("d/" + std::string(255, 'a'), open_mode::create));
    auto f = fs.open("d/" + std::string(256, 'a'), open_mode::create);
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error(), std::errc::filename_too_long);
    auto dir = fs.create_directory(std::string(256, 'b'));
    ASSERT_FALSE(dir);
    EXPECT_EQ(dir.error(), std::errc::filename_too_long);
    auto moved = fs.rename("d/" + std::string(255, 'a'), "d/" + std::string(256, 'c'));
    ASSERT_FALSE(moved);
    EXPECT_EQ(moved.error(), std::errc::filename_too_long);
    auto written = write_file_atomic(fs, "d/" + std::string(252, 'e'), bytes_of("x"));
    ASSERT_FALSE(written);  // "<name>.tmp" is 256 bytes
    EXPECT_TRUE(write_file_atomic(fs, "d/" + std::string(252, 'e'), bytes_of("x"), "d/e.tmp"));
    EXPECT_EQ(content(fs, "d/" + std::string(252, 'e')), "x");
}

TEST(MemoryFileSystem, RenameIsDurableOnlyAfterDirectorySync) {
    memory_file_system fs;
    auto f = fs.open("x.tmp", open_mode::create);
    ASSERT_TRUE((*f)->write_at(bytes_of("new"), 0));
    ASSERT_TRUE((*f)->sync());
    ASSERT_TRUE(fs.sync_dir("."));
    ASSERT_TRUE(fs.rename("x.tmp", "x"));

    auto before_sync = fs.crash_copy();
    ASSERT_TRUE(fs.sync_dir("."));
    auto after_sync = fs.crash_copy();

    EXPECT_TRUE(*before_sync->exists("x.tmp"));
    EXPECT_FALSE(*before_sync->exists("x"));
    EXPECT_EQ(content(*after_sync, "x"), "new");
}

TEST(MemoryFileSystem, OverwriteBelowSyncedLengthIsUndoneByCrash) {
    memory_file_system fs;
    auto f = fs.open("a", open_mode::create);
    ASSERT_TRUE((*f)->write_at(bytes_of("abcdef"), 0));
    ASSERT_TRUE((*f)->sync());
    ASSERT_TRUE(fs.sync_dir("."));
    ASSERT_TRUE((*f)->truncate(2));
    ASSERT_TRUE((*f)->write_at(bytes_of("XY"), 2));

    EXPECT_EQ(content(*fs.crash_copy(), "a"), "abcdef");
}

TEST(MemoryFileSystem, RandomPrefixOfUnsyncedTailCanSurvive) {
    memory_file_system fs;
    auto f = fs.open("a", open_mode::create);
    ASSERT_TRUE(fs.sync_dir("."));
    ASSERT_TRUE((*f)->write_at(bytes_of(std::string(1000, 'z')), 0));
    std::set<std::size_t> sizes;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        auto after = fs.crash_copy({.keep_random_unsynced_prefix = true, .seed = seed});
        sizes.insert(content(*after, "a").size());
    }
    EXPECT_GT(sizes.size(), 5u);
    EXPECT_LE(*sizes.rbegin(), 1000u);
}

TEST(MemoryFileSystem, CapacityMakesWritesFailWithEnospcAfterWritingWhatFits) {
    memory_file_system fs;
    fs.set_capacity(10);
    auto f = fs.open("a", open_mode::create);
    auto w = (*f)->write_at(bytes_of("0123456789abc"), 0);
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().value(), ENOSPC);
    EXPECT_TRUE(is_disk_full(w.error()));
    EXPECT_EQ(*(*f)->size(), 10u);
    ASSERT_TRUE((*f)->truncate(4));
    EXPECT_TRUE((*f)->write_at(bytes_of("xyz"), 4));
}

TEST(MemoryFileSystem, InjectedSyncFailureIsReportedOnce) {
    memory_file_system fs;
    auto f = fs.open("a", open_mode::create);
    fs.fail_next_syncs(1, errno_code(EIO));
    EXPECT_FALSE((*f)->sync());
    EXPECT_TRUE((*f)->sync());
    EXPECT_EQ(fs.sync_count(), 1u);
}

TEST(MemoryFileSystem, RemovedFileStaysReadableThroughOpenHandle) {
    memory_file_system fs;
    auto f = fs.open("a", open_mode::create);
    ASSERT_TRUE((*f)->write_at(bytes_of("data"), 0));
    ASSERT_TRUE(fs.remove("a"));
    std::byte buf[4];
    EXPECT_EQ(*(*f)->read_at(buf, 0), 4u);
    EXPECT_FALSE(*fs.exists("a"));
}

TEST(FileCache, KeepsAtMostMaxOpenFilesAndReopensOnUse) {
    auto fs = std::make_shared<memory_file_system>();
    auto cache = std::make_shared<file_cache>(fs, 2);
    std::vector<std::unique_ptr<cached_file>> files;
    for (int i = 0; i < 5; ++i) {
        files.push_back(
            std::make_unique<cached_file>(cache, "f" + std::to_string(i), open_mode::create));
        auto f = files.back()->get();
        ASSERT_TRUE(f);
        ASSERT_TRUE((*f)->write_at(bytes_of("v" + std::to_string(i)), 0));
    }
    EXPECT_EQ(cache->open_count(), 2u);

    auto first = files[0]->get();  // evicted earlier, reopened by name
    ASSERT_TRUE(first);
    std::byte buf[2];
    ASSERT_EQ(*(*first)->read_at(buf, 0), 2u);
    EXPECT_EQ(static_cast<char>(buf[1]), '0');
    EXPECT_EQ(cache->open_count(), 2u);
    files.clear();
    EXPECT_EQ(cache->open_count(), 0u);
}

}  // namespace
}  // namespace sluice::backend::io
