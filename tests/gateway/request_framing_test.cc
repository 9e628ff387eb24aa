#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gateway/httpcore/request_framing.h"

namespace sluice::gateway {
namespace {

/// A POST header with the given fields (name, value), in order.
http_request header_with(std::vector<std::pair<std::string, std::string>> fields,
                         unsigned version = 11) {
    http_request req{boost::beast::http::verb::post, "/topics/t", version};
    for (auto& [name, value] : fields) {
        req.insert(name, value);
    }
    return req;
}

unsigned refused_status(const http_request& req) {
    const auto e = check_framing(req);
    return e ? e->status : 0;
}

TEST(RequestFraming, AcceptsOneContentLengthOrChunkedAlone) {
    EXPECT_EQ(refused_status(header_with({})), 0u);
    EXPECT_EQ(refused_status(header_with({{"Content-Length", "0"}})), 0u);
    EXPECT_EQ(refused_status(header_with({{"Content-Length", "60000000"}})), 0u);
    EXPECT_EQ(refused_status(header_with({{"Transfer-Encoding", "chunked"}})), 0u);
    EXPECT_EQ(refused_status(header_with({{"Transfer-Encoding", "CHUNKED"}})), 0u);
    EXPECT_EQ(refused_status(header_with({{"Transfer-Encoding", " chunked\t"}})), 0u);
}

TEST(RequestFraming, RefusesAFinalCodingOtherThanChunked) {
    for (const char* te : {"xchunked", "identity", "chunked, identity", "chunkedx", "", ","}) {
        EXPECT_EQ(refused_status(header_with({{"Transfer-Encoding", te}})), 400u) << te;
    }
}

TEST(RequestFraming, RefusesChunkedTwiceInOneFieldOrAcrossFields) {
    EXPECT_EQ(refused_status(header_with({{"Transfer-Encoding", "chunked, chunked"}})), 400u);
    EXPECT_EQ(refused_status(header_with(
                  {{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}})),
              400u);
    EXPECT_EQ(refused_status(header_with(
                  {{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "identity"}})),
              400u);
    EXPECT_EQ(refused_status(header_with(
                  {{"Transfer-Encoding", "identity"}, {"Transfer-Encoding", "chunked"}})),
              400u);
}

TEST(RequestFraming, RefusesTransferEncodingWithContentLength) {
    EXPECT_EQ(refused_status(header_with(
                  {{"Content-Length", "4"}, {"Transfer-Encoding", "chunked"}})),
              400u);
    EXPECT_EQ(refused_status(header_with(
                  {{"Transfer-Encoding", "chunked"}, {"Content-Length", "4"}})),
              400u);
}

TEST(RequestFraming, RefusesTransferEncodingInHttp10) {
    EXPECT_EQ(refused_status(header_with({{"Transfer-Encoding", "chunked"}}, 10)), 400u);
}

TEST(RequestFraming, AnUnsupportedCompressionBeforeChunkedIs501AndAnUnknownOne400) {
    EXPECT_EQ(refused_status(header_with({{"Transfer-Encoding", "gzip, chunked"}})), 501u);
    EXPECT_EQ(refused_status(header_with({{"Transfer-Encoding", "foo, chunked"}})), 400u);
}

TEST(RequestFraming, RefusesRepeatedListedOrNonNumericContentLength) {
    EXPECT_EQ(refused_status(header_with({{"Content-Length", "5"}, {"Content-Length", "5"}})),
              400u);
    EXPECT_EQ(refused_status(header_with({{"Content-Length", "0"}, {"Content-Length", "5"}})),
              400u);
    for (const char* cl : {"0, 0", "5, 6", "-1", "+0", "0x10", "1e3", " ", "12 3"}) {
        EXPECT_EQ(refused_status(header_with({{"Content-Length", cl}})), 400u) << cl;
    }
}

TEST(RequestFraming, TheMessageQuotesTheClientsValuePrintably) {
    const auto e = check_framing(header_with({{"Transfer-Encoding", "x\x01\"chunked"}}));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->message.find('\x01'), std::string::npos);
    EXPECT_NE(e->message.find("x??chunked"), std::string::npos) << e->message;
}

TEST(RequestFramingBytes, RefusesObsoleteLineFolding) {
    EXPECT_TRUE(check_header_bytes("POST / HTTP/1.1\r\nX-A: a\r\n Transfer-Encoding: chunked\r\n"
                                   "\r\n"));
    EXPECT_TRUE(check_header_bytes("POST / HTTP/1.1\r\nX-A: a\r\n\tmore\r\n\r\n"));
}

TEST(RequestFramingBytes, RefusesABareLineFeed) {
    EXPECT_TRUE(check_header_bytes("POST / HTTP/1.1\r\nX-A: a\nTransfer-Encoding: chunked\r\n"
                                   "\r\n"));
    EXPECT_TRUE(check_header_bytes("POST / HTTP/1.1\n\r\n"));
}

TEST(RequestFramingBytes, AcceptsAPlainHeaderAndALeadingEmptyLine) {
    EXPECT_FALSE(check_header_bytes("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n"));
    EXPECT_FALSE(check_header_bytes("\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    // As much as has arrived: a partial header is checked as far as it goes.
    EXPECT_FALSE(check_header_bytes("POST / HTTP/1.1\r\nHo"));
}

TEST(RequestFramingBytes, FindsTheEndOfTheHeaderAcrossReads) {
    const std::string bytes = "GET / HTTP/1.1\r\nHost: x\r\n\r\nBODY";
    EXPECT_EQ(find_header_end(bytes), bytes.size() - 4);
    EXPECT_EQ(find_header_end(bytes, 20), bytes.size() - 4);
    EXPECT_FALSE(find_header_end("GET / HTTP/1.1\r\nHost: x\r\n"));
}

}  // namespace
}  // namespace sluice::gateway
