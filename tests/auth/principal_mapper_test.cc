// ssl.principal.mapping.rules: Kafka's rule syntax and matching order.
#include <gtest/gtest.h>

#include "auth/tls/principal_mapper.h"

namespace sluice::auth {
namespace {

TEST(PrincipalMapper, DefaultKeepsTheSubject) {
    principal_mapper m("DEFAULT");
    EXPECT_EQ(m.map("CN=alice,OU=ops,O=example"), "CN=alice,OU=ops,O=example");
}

TEST(PrincipalMapper, EmptyRulesMeanDefault) {
    principal_mapper m("  ");
    EXPECT_EQ(m.map("CN=alice"), "CN=alice");
}

TEST(PrincipalMapper, RuleReplacesWithGroupsAndLowersCase) {
    principal_mapper m("RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L");
    EXPECT_EQ(m.map("CN=Alice,OU=Ops,O=example"), "alice@ops");
}

TEST(PrincipalMapper, UpperCaseFlag) {
    principal_mapper m("RULE:^CN=([a-z]+)$/$1/U");
    EXPECT_EQ(m.map("CN=bob"), "BOB");
}

TEST(PrincipalMapper, FirstMatchingRuleWinsAndCommasBelongToPatterns) {
    principal_mapper m("RULE:^CN=(.*?),OU=ServiceUsers.*$/svc-$1/, RULE:^CN=(.*?),.*$/$1/, DEFAULT");
    EXPECT_EQ(m.map("CN=kafka,OU=ServiceUsers,O=x"), "svc-kafka");
    EXPECT_EQ(m.map("CN=carol,OU=People,O=x"), "carol");
    EXPECT_EQ(m.map("O=nobody"), "O=nobody");
}

TEST(PrincipalMapper, NoMatchingRuleGivesNoPrincipal) {
    principal_mapper m("RULE:^CN=(.*)$/$1/");
    EXPECT_EQ(m.map("O=example"), std::nullopt);
}

TEST(PrincipalMapper, EscapedSlashInPattern) {
    principal_mapper m("RULE:^CN=(.*)\\/(.*)$/$2/");
    EXPECT_EQ(m.map("CN=a/b"), "b");
}

TEST(PrincipalMapper, BadRulesAreRefused) {
    EXPECT_THROW(principal_mapper("RULE:^CN=(.*)$"), principal_rules_error);
    EXPECT_THROW(principal_mapper("RULE:^CN=(.*)$/$1"), principal_rules_error);
    EXPECT_THROW(principal_mapper("SOMETHING"), principal_rules_error);
    EXPECT_THROW(principal_mapper("RULE:^CN=((.*$/$1/"), principal_rules_error);
    EXPECT_THROW(principal_mapper("DEFAULT,"), principal_rules_error);
    EXPECT_THROW(principal_mapper("RULE:a/b/Lx"), principal_rules_error);
}

}  // namespace
}  // namespace sluice::auth
