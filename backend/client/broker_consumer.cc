#include "backend/client/broker_consumer.h"

namespace sluice::backend::client {

// Placeholder until the consumer lands (issue 26, in progress).
std::shared_ptr<api::consumer> open_broker_consumer(api::topics&, api::records&, api::groups&,
                                                    api::consumer_options,
                                                    boost::asio::any_io_executor) {
    return nullptr;
}

}  // namespace sluice::backend::client
