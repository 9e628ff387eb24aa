#include "backend/client/broker_admin.h"

namespace sluice::backend::client {

// Placeholder until admin lands (issue 26, in progress).
std::unique_ptr<api::admin> make_broker_admin(api::topics&, api::records&, api::groups&,
                                              const broker_client_options&) {
    return nullptr;
}

}  // namespace sluice::backend::client
