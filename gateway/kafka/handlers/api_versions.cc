// ApiVersions: the versions of every API we serve, identical on every connection.
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

boost::asio::awaitable<api_versions_handler::response> api_versions_handler::handle(request_context&,
                                                                           request) {
    response resp;
    resp.error_code = kafka::error_code::none;
    for (const auto& h : handler_registry()) {
        resp.api_keys.push_back(
            {static_cast<kafka::api_key>(h.api_key), h.min_version, h.max_version, {}});
    }
    co_return resp;
}

}  // namespace sluice::gateway
