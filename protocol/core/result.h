// result<T>: the value of an operation that can fail in an expected way, or the error code.
// Every module reports expected failures through this type; see STYLE.md section 4.
//
// With g++ 12 in C++23 mode this is std::expected<T, std::error_code>. clang 14 (used only for
// the libFuzzer build of the protocol module) cannot compile libstdc++'s <expected>, so there
// a small stand-in with the same core interface is used. Code that must build both ways uses
// only: has_value(), operator bool, operator*, operator->, value(), error(), and sluice::fail()
// to make an error (never std::unexpected directly).
#pragma once

#include <system_error>
#include <type_traits>
#include <utility>
#include <version>

#if defined(__cpp_lib_expected)
#include <expected>
#else
#include <cstdlib>
#include <variant>
#endif

namespace sluice {

#if defined(__cpp_lib_expected)

template <typename T>
using result = std::expected<T, std::error_code>;
using failure = std::unexpected<std::error_code>;

#else

/// The error side of a result (stand-in for std::unexpected<std::error_code>).
class failure {
public:
    explicit failure(std::error_code ec) : ec_(ec) {}
    const std::error_code& error() const { return ec_; }

private:
    std::error_code ec_;
};

template <typename T>
class result {
public:
    result() requires std::is_default_constructible_v<T> : v_(std::in_place_index<0>) {}
    template <typename U = T>
        requires std::is_constructible_v<T, U&&> &&
                 (!std::is_same_v<std::remove_cvref_t<U>, result>) &&
                 (!std::is_same_v<std::remove_cvref_t<U>, failure>)
    result(U&& v) : v_(std::in_place_index<0>, std::forward<U>(v)) {}
    result(failure f) : v_(std::in_place_index<1>, f.error()) {}

    bool has_value() const { return v_.index() == 0; }
    explicit operator bool() const { return has_value(); }
    T& operator*() { return std::get<0>(v_); }
    const T& operator*() const { return std::get<0>(v_); }
    T* operator->() { return &std::get<0>(v_); }
    const T* operator->() const { return &std::get<0>(v_); }
    T& value() {
        if (!has_value()) std::abort();
        return std::get<0>(v_);
    }
    const T& value() const {
        if (!has_value()) std::abort();
        return std::get<0>(v_);
    }
    const std::error_code& error() const { return std::get<1>(v_); }

private:
    std::variant<T, std::error_code> v_;
};

template <>
class result<void> {
public:
    result() = default;
    result(failure f) : ec_(f.error()), failed_(true) {}
    bool has_value() const { return !failed_; }
    explicit operator bool() const { return has_value(); }
    void operator*() const {}
    void value() const {
        if (failed_) std::abort();
    }
    const std::error_code& error() const { return ec_; }

private:
    std::error_code ec_;
    bool failed_ = false;
};

#endif

/// Builds the error side of a result from any module's errc enum or an error_code.
template <typename E>
    requires std::is_error_code_enum_v<E>
[[nodiscard]] inline failure fail(E e) {
    return failure(make_error_code(e));
}

[[nodiscard]] inline failure fail(std::error_code ec) { return failure(ec); }

}  // namespace sluice
