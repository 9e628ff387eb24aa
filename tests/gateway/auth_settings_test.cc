#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway/policy/auth_settings.h"

namespace sluice::gateway {
namespace {

using strings = std::vector<std::string>;

TEST(AuthSettings, SplitListTrimsBlanksAndDropsEmptyItems) {
    EXPECT_EQ(split_list(" User:admin ;; User:ops\t;", ';'), (strings{"User:admin", "User:ops"}));
    EXPECT_EQ(split_list("", ';'), strings{});
    EXPECT_EQ(split_list(" \t ", ';'), strings{});
}

TEST(AuthSettings, SplitListKeepsOtherSeparators) {
    EXPECT_EQ(split_list("a,b;c", ';'), (strings{"a,b", "c"}));
    EXPECT_EQ(split_comma_list("a, b ,,c"), (strings{"a", "b", "c"}));
}

}  // namespace
}  // namespace sluice::gateway
