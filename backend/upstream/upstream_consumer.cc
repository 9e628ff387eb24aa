#include "backend/upstream/upstream_consumer.h"

namespace sluice::backend::upstream {

// Placeholder until the librdkafka consumer lands (issue 26, in progress).
std::shared_ptr<api::consumer> open_upstream_consumer(const upstream_options&,
                                                      boost::asio::thread_pool&,
                                                      api::consumer_options,
                                                      boost::asio::any_io_executor) {
    return nullptr;
}

}  // namespace sluice::backend::upstream
