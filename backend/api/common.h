// What every part of the backend interface shares (owned by backend/api): the awaitable type
// its calls return, and its one error shape: backend_error (a code and an optional message for
// the client) and backend_result<T> (a value or a backend_error).
#pragma once

#include <concepts>
#include <expected>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "backend/api/errc.h"
#include "protocol/core/result.h"

namespace sluice::backend::api {

template <typename T>
using awaitable = boost::asio::awaitable<T>;

/// The one error of the backend interface: why a call, or one part of its answer (a partition,
/// a group, a member, a message), failed.
///
/// `code` is an std::error_code whose api::reason() is an api::errc: the api category itself,
/// or a backend's own category that names an api::errc as its default_error_condition. Fronts
/// switch on reason(code), never on a backend's category.
/// `message` is for the client (which key was bad and why); it may be empty, and then fronts
/// use the code's own message (text()).
///
/// Empty means success: an error inside an answer (produced_partition::error,
/// sent_message::error, one of delete_messages' answers, ...) has an empty code when that part
/// succeeded. Calls that answer a value or a failure return backend_result<T> instead.
/// Cost: an empty error allocates nothing (an empty std::string is inline), so the answers of
/// the hot paths (produce, fetch) carry one per partition for free.
struct backend_error {
    std::error_code code;
    std::string message;

    backend_error() noexcept = default;
    /// Implicit: a code is an error without a message (and an empty code is success).
    backend_error(std::error_code c) noexcept : code(c) {}
    template <typename E>
        requires std::is_error_code_enum_v<E>
    backend_error(E e) noexcept : code(make_error_code(e)) {}
    backend_error(std::error_code c, std::string m) noexcept : code(c), message(std::move(m)) {}

    /// True when this is an error (its code is not empty).
    explicit operator bool() const noexcept { return static_cast<bool>(code); }
    /// What the error means in api terms (errc::unknown for a code of no known meaning).
    /// Only for errors: an empty code has no reason.
    errc reason() const noexcept { return api::reason(code); }
    /// The message for the client: the backend's own, else the code's.
    std::string text() const { return message.empty() ? code.message() : message; }

    /// Compares the code only (the message is not part of what the error means).
    friend bool operator==(const backend_error& e, const std::error_code& c) noexcept {
        return e.code == c;
    }
    template <typename E>
        requires std::is_error_code_enum_v<E>
    friend bool operator==(const backend_error& e, E c) noexcept {
        return e.code == make_error_code(c);
    }
};

/// What `e` means in api terms (as reason(e.code)). `e` must be an error (not empty).
inline errc reason(const backend_error& e) noexcept { return reason(e.code); }

/// The answer of a call that gives a value or fails: std::expected<T, backend_error>.
/// `return sluice::fail(errc::x);` (a code alone) and `return backend_failure(code, "...")`
/// (with a message) both make the failure side.
template <typename T>
using backend_result = std::expected<T, backend_error>;

/// The failure side of a backend_result, with a message for the client.
[[nodiscard]] inline std::unexpected<backend_error> backend_failure(backend_error e) {
    return std::unexpected<backend_error>(std::move(e));
}
[[nodiscard]] inline std::unexpected<backend_error> backend_failure(std::error_code code,
                                                                    std::string message) {
    return std::unexpected<backend_error>(backend_error(code, std::move(message)));
}

/// The error of a result, empty when it holds a value: for answers that carry an error field.
template <typename T>
[[nodiscard]] backend_error error_of(const backend_result<T>& r) {
    return r ? backend_error() : r.error();
}

/// A code that is empty on success, as the answer of a call that gives no value.
[[nodiscard]] inline backend_result<void> to_result(std::error_code ec) {
    if (ec) {
        return backend_failure(ec);
    }
    return {};
}

}  // namespace sluice::backend::api
