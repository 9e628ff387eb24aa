// sluice's version, named in one place: the project version of the top CMakeLists.txt's
// project(), and the git commit the build was made from when it was made in a git work tree.
// Their definitions are generated into the build directory from version_info.cc.in by
// version_info.cmake at every build (the file is touched only when its text changes).
#pragma once

#include <string>
#include <string_view>

namespace sluice::gateway {

/// The project version, "0.1.0".
std::string_view sluice_version();
/// The short hash of the commit built, "" when the build was made outside git.
std::string_view sluice_commit();
/// "0.1.0", or "0.1.0 (commit 29600c8d1e2f)" when the commit is known: what `sluice
/// --version` prints and the console shows.
std::string sluice_version_text();

}  // namespace sluice::gateway
