// The browser files of gateway/http/ui/ (sluice.js, the example pages), embedded into the
// executable at build time: gateway/http/embed_ui.py writes the definition of ui_assets() into
// the build directory (never committed), one entry per file with its bytes and ETag.
// Read-only static data; thread-safe.
#pragma once

#include <span>
#include <string_view>

namespace sluice::gateway {

/// One embedded file.
struct ui_asset {
    /// The path below gateway/http/ui/, with '/' separators: "index.html", "sluice.js".
    std::string_view path;
    std::string_view body;
    /// A strong entity tag, quotes included: a digest of the bytes, so it changes exactly
    /// when the file does.
    std::string_view etag;
};

/// Every embedded file, sorted by path.
std::span<const ui_asset> ui_assets();

}  // namespace sluice::gateway
