// Golden bytes: requests captured from real Kafka clients (tests/fixtures/kafka/, see the
// README there) must decode with the generated codec, leave nothing unread, and re-encode to
// exactly the bytes the client sent. One test per fixture file, named after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "protocol/core/bytes.h"
#include "protocol/kafka/all_messages.h"
#include "protocol/kafka/header.h"

namespace sluice::protocol::kafka {
namespace {

const std::filesystem::path golden_fixture_dir =
    std::filesystem::path(SLUICE_FIXTURE_DIR) / "kafka";

std::vector<std::string> fixture_names() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(golden_fixture_dir, ec)) {
        if (entry.is_regular_file() && entry.path().extension() == ".bin") {
            names.push_back(entry.path().stem().string());
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

/// The schema name the file name starts with: everything before "_v<digits>_".
std::string api_of(const std::string& name) {
    for (std::size_t at = name.find("_v"); at != std::string::npos; at = name.find("_v", at + 1)) {
        std::size_t end = at + 2;
        while (end < name.size() && name[end] >= '0' && name[end] <= '9') {
            ++end;
        }
        if (end > at + 2 && end < name.size() && name[end] == '_') {
            return name.substr(0, at);
        }
    }
    return {};
}

/// Kafka's name for a schema name: offset_commit -> OffsetCommit.
std::string kafka_name(const std::string& snake) {
    std::string out;
    bool upper = true;
    for (char c : snake) {
        if (c == '_') {
            upper = true;
        } else {
            out.push_back(upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
            upper = false;
        }
    }
    return out;
}

std::string hex_around(bytes_view b, std::size_t at) {
    std::ostringstream os;
    const std::size_t from = at < 8 ? 0 : at - 8;
    const std::size_t to = std::min(b.size(), at + 8);
    os << std::hex;
    for (std::size_t i = from; i < to; ++i) {
        os << (i == at ? "[" : " ") << static_cast<int>(b[i]) << (i == at ? "]" : "");
    }
    return os.str();
}

/// librdkafka's all-topics Metadata request at v9+ keeps a 4-byte array-count placeholder of
/// which Kafka reads the first byte (null topics); the other 3 follow the body.
template <typename Req>
bool is_rdkafka_all_topics_metadata(const Req& req, std::int16_t version) {
    if constexpr (std::is_same_v<Req, metadata_request>) {
        return version >= 9 && !req.topics.has_value() && req.trailing_bytes.size() == 3;
    } else {
        return false;
    }
}

class GoldenRequests : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenRequests, DecodesAndReencodesIdentically) {
    const std::string name = GetParam();
    std::ifstream in(golden_fixture_dir / (name + ".bin"), std::ios::binary);
    ASSERT_TRUE(in) << "cannot open " << name;
    const std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // The frame owns its bytes the way a connection's read buffer does: decoded records and
    // other views stay valid while `frame` lives.
    auto frame = std::make_shared<byte_buffer>();
    frame->append(bytes_view(reinterpret_cast<const std::byte*>(raw.data()), raw.size()));

    reader r(frame->view(), frame);
    auto header = decode_request_header(r);
    ASSERT_TRUE(header.has_value()) << "header: " << header.error().message();
    const std::int16_t version = header->api_version;

    bool ran = false;
    const bool known = with_message_types(header->api_key, [&]<typename Req, typename Resp>() {
        ran = true;
        ASSERT_EQ(kafka_name(api_of(name)), std::string(api_name(Req::key)))
            << "the file name does not match API key " << header->api_key;
        ASSERT_TRUE(version >= Req::min_version && version <= Req::max_version)
            << "version " << version << " outside " << Req::min_version << "-"
            << Req::max_version;

        Req req;
        req.decode(r, version);
        ASSERT_TRUE(r.ok()) << "body: " << r.error().message() << " at byte " << r.position();
        ASSERT_EQ(r.remaining(), 0u) << "unread bytes after the body";
        // Trailing bytes are accepted (Kafka ignores them) but would also hide a field missing
        // from a schema, so only the one known client quirk may leave them.
        if (!req.trailing_bytes.empty()) {
            EXPECT_TRUE(is_rdkafka_all_topics_metadata(req, version))
                << req.trailing_bytes.size() << " bytes after the body: " << req;
        }

        writer w;
        encode_request_header(w, *header);
        req.encode(w, version);
        const byte_buffer out = w.flatten();
        const bytes_view want = frame->view();
        const bytes_view got = out.view();
        const auto diff = std::mismatch(want.begin(), want.end(), got.begin(), got.end());
        const auto at = static_cast<std::size_t>(diff.first - want.begin());
        EXPECT_TRUE(diff.first == want.end() && diff.second == got.end())
            << "re-encoded " << got.size() << " bytes, captured " << want.size()
            << "; first difference at byte " << at << "\n  captured:" << hex_around(want, at)
            << "\n  encoded: " << hex_around(got, at) << "\n  decoded: " << req;
    });
    EXPECT_TRUE(known && ran) << "no schema for API key " << header->api_key << " (" << name
                              << ")";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenRequests, ::testing::ValuesIn(fixture_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             return info.param;
                         });

TEST(GoldenRequestFixtures, DirectoryIsNotEmpty) {
    EXPECT_FALSE(fixture_names().empty()) << "no *.bin files in " << golden_fixture_dir;
}

}  // namespace
}  // namespace sluice::protocol::kafka
