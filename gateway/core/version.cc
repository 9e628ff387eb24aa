#include "gateway/core/version.h"

namespace sluice::gateway {

std::string sluice_version_text() {
    std::string text(sluice_version());
    if (!sluice_commit().empty()) {
        text += " (commit ";
        text += sluice_commit();
        text += ")";
    }
    return text;
}

}  // namespace sluice::gateway
