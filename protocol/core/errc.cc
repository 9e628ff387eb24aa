#include "protocol/core/errc.h"

#include <string>

namespace sluice::protocol {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "protocol"; }
    std::string message(int v) const override {
        switch (static_cast<errc>(v)) {
            case errc::truncated: return "input truncated";
            case errc::invalid_length: return "invalid length or count";
            case errc::invalid_varint: return "invalid varint";
            case errc::unsupported_version: return "unsupported API version";
            case errc::unknown_api: return "unknown API key";
            case errc::invalid_value: return "invalid field value";
            case errc::crc_mismatch: return "CRC mismatch";
            case errc::unsupported_compression: return "unsupported compression codec";
            case errc::compression_error: return "compression error";
            case errc::too_large: return "size limit exceeded";
            case errc::trailing_bytes: return "trailing bytes after message";
        }
        return "unknown protocol error";
    }
};

}  // namespace

const std::error_category& protocol_category() noexcept {
    static const category c;
    return c;
}

}  // namespace sluice::protocol
