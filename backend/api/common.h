// What every part of the backend interface shares (owned by backend/api): the awaitable type
// its calls return and the failure of an administrative call.
#pragma once

#include <string>
#include <system_error>

#include <boost/asio/awaitable.hpp>

#include "backend/api/errc.h"
#include "protocol/core/result.h"

namespace sluice::backend::api {

template <typename T>
using awaitable = boost::asio::awaitable<T>;

/// An administrative failure: the error, and a message for the client (which key was bad and
/// why). The message may be empty; fronts then use the error's own.
struct admin_error {
    std::error_code code;
    std::string message;
};

template <typename T>
using admin_result = std::expected<T, admin_error>;

}  // namespace sluice::backend::api
