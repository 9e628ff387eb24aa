// The credential store: what it keeps, its file round trip, and its atomic, private rewrite.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "auth/credential_store.h"
#include "auth/crypto.h"

namespace sluice::auth {
namespace {

namespace fs = std::filesystem;

class CredentialStoreFile : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/sluice-auth-test-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        file_ = credential_store::path_in(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string read_file(const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    fs::path dir_;
    fs::path file_;
};

TEST(Credentials, StoredKeysFollowRfc5802) {
    const std::string salt = "0123456789abcdef";
    auto c = make_scram_credential(hash_algorithm::sha256, "pencil", 4096, salt);

    const std::string salted = pbkdf2(hash_algorithm::sha256, "pencil", salt, 4096);
    EXPECT_EQ(c.stored_key, hash(hash_algorithm::sha256,
                                 hmac(hash_algorithm::sha256, salted, "Client Key")));
    EXPECT_EQ(c.server_key, hmac(hash_algorithm::sha256, salted, "Server Key"));
    EXPECT_EQ(c.iterations, 4096);
}

TEST(Credentials, NewUserHasEveryMechanismWithDistinctSalts) {
    auto u = make_user_credentials("pw");

    ASSERT_TRUE(u.scram_sha_256 && u.scram_sha_512 && u.plain);
    EXPECT_GE(u.scram_sha_256->iterations, 4096);
    EXPECT_EQ(u.scram_sha_512->stored_key.size(), 64u);
    EXPECT_NE(u.plain->salt, u.scram_sha_512->salt);
    EXPECT_TRUE(verify_plain(*u.plain, "pw"));
    EXPECT_FALSE(verify_plain(*u.plain, "pw "));
}

TEST(Credentials, UserNamesWithSpacesOrControlsAreRefused) {
    EXPECT_TRUE(valid_user_name("alice@example.com"));
    EXPECT_TRUE(valid_user_name("a,b=c"));
    EXPECT_FALSE(valid_user_name(""));
    EXPECT_FALSE(valid_user_name("a b"));
    EXPECT_FALSE(valid_user_name("a\nb"));
    EXPECT_FALSE(valid_user_name(std::string(256, 'x')));
}

TEST_F(CredentialStoreFile, MissingFileIsAnEmptyStore) {
    auto store = credential_store::load(file_);

    EXPECT_TRUE(store.empty());
}

TEST_F(CredentialStoreFile, SaveAndLoadRoundTrip) {
    credential_store store(file_);
    auto alice = make_user_credentials("s3cret");
    auto bob = make_user_credentials("hunter2", 8192);
    store.set("alice", alice);
    store.set("bob", bob);
    store.save();

    auto loaded = credential_store::load(file_);

    EXPECT_EQ(loaded.users(), (std::vector<std::string>{"alice", "bob"}));
    EXPECT_EQ(loaded.find("alice"), alice);
    EXPECT_EQ(loaded.find("bob"), bob);
    EXPECT_FALSE(loaded.find("carol"));
}

TEST_F(CredentialStoreFile, FileHoldsNoPasswordAndIsPrivate) {
    credential_store store(file_);
    store.set("alice", make_user_credentials("correct-horse-battery"));
    store.save();

    struct stat st {};
    ASSERT_EQ(::stat(file_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600);
    EXPECT_EQ(read_file(file_).find("correct-horse-battery"), std::string::npos);
}

TEST_F(CredentialStoreFile, RewriteReplacesTheFileInsteadOfEditingIt) {
    credential_store store(file_);
    store.set("alice", make_user_credentials("one"));
    store.save();
    const std::string before = read_file(file_);
    // A second name for the old file: an in-place rewrite would change what it shows.
    fs::create_hard_link(file_, dir_ / "old-link");

    store.erase("alice");
    store.set("bob", make_user_credentials("two"));
    store.save();

    EXPECT_EQ(read_file(dir_ / "old-link"), before);
    auto loaded = credential_store::load(file_);
    EXPECT_EQ(loaded.users(), std::vector<std::string>{"bob"});
    EXPECT_FALSE(fs::exists(fs::path(file_.string() + ".tmp")));
}

TEST_F(CredentialStoreFile, LeftoverTemporaryFileIsIgnoredAndReplaced) {
    credential_store store(file_);
    store.set("alice", make_user_credentials("one"));
    store.save();
    std::ofstream(file_.string() + ".tmp") << "half-written garbage";

    auto loaded = credential_store::load(file_);
    EXPECT_TRUE(loaded.find("alice"));
    loaded.save();

    EXPECT_FALSE(fs::exists(fs::path(file_.string() + ".tmp")));
    EXPECT_TRUE(credential_store::load(file_).find("alice"));
}

TEST_F(CredentialStoreFile, CorruptFileIsRefusedWithItsLine) {
    std::ofstream(file_) << "sluice-credentials 1\nuser alice scram-sha-256=4096:AAAA\n";

    try {
        credential_store::load(file_);
        FAIL() << "expected an error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(":2:"), std::string::npos) << e.what();
    }
}

TEST_F(CredentialStoreFile, TooFewIterationsAreRefused) {
    auto c = make_scram_credential(hash_algorithm::sha256, "pw", 4096);
    credential_store store(file_);
    user_credentials u;
    u.scram_sha_256 = c;
    store.set("alice", u);
    store.save();
    std::string text = read_file(file_);
    text.replace(text.find("=4096:"), 6, "=1000:");
    std::ofstream(file_, std::ios::trunc) << text;

    EXPECT_THROW(credential_store::load(file_), std::runtime_error);
}

TEST_F(CredentialStoreFile, WrongMagicIsRefused) {
    std::ofstream(file_) << "something else\n";

    EXPECT_THROW(credential_store::load(file_), std::runtime_error);
}

}  // namespace
}  // namespace sluice::auth
