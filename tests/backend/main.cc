// backend_tests entry point. With "--crash-writer ..." the binary is the child process of the
// real crash tests (crash_test.cc) instead of the test runner.
#include <gtest/gtest.h>

#include <cstring>

namespace sluice::backend::test {
int crash_writer_main(int argc, char** argv);
}

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--crash-writer") == 0) {
        return sluice::backend::test::crash_writer_main(argc, argv);
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
