// Strong identifiers shared by every module: a partition id, an offset, a producer id and
// epoch cannot be swapped for each other or for a plain integer by accident.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace sluice {

/// A value of type T that only converts explicitly. Tag makes each alias a distinct type.
template <typename T, typename Tag>
struct strong {
    using value_type = T;
    T value{};

    constexpr strong() = default;
    constexpr explicit strong(T v) : value(v) {}

    constexpr auto operator<=>(const strong&) const = default;
    constexpr bool operator==(const strong&) const = default;
};

using partition_id = strong<std::int32_t, struct partition_id_tag>;
using node_id = strong<std::int32_t, struct node_id_tag>;
using producer_id = strong<std::int64_t, struct producer_id_tag>;
using producer_epoch = strong<std::int16_t, struct producer_epoch_tag>;

/// A position in a partition's log. Offsets are dense: arithmetic with counts is allowed.
struct offset : strong<std::int64_t, struct offset_tag> {
    using strong::strong;
    constexpr offset operator+(std::int64_t n) const { return offset(value + n); }
    constexpr offset operator-(std::int64_t n) const { return offset(value - n); }
    constexpr std::int64_t operator-(offset o) const { return value - o.value; }
    constexpr offset& operator++() {
        ++value;
        return *this;
    }
    constexpr auto operator<=>(const offset&) const = default;
    constexpr bool operator==(const offset&) const = default;
};

/// Names the domain gives to things: a topic, a consumer group and a transactional id are all
/// strings on the wire, and none may be passed where another is expected.
using topic_name = strong<std::string, struct topic_name_tag>;
using group_id = strong<std::string, struct group_id_tag>;
using transactional_id = strong<std::string, struct transactional_id_tag>;

constexpr producer_id no_producer_id{-1};
constexpr producer_epoch no_producer_epoch{-1};

}  // namespace sluice

template <typename T, typename Tag>
struct std::hash<sluice::strong<T, Tag>> {
    std::size_t operator()(const sluice::strong<T, Tag>& s) const noexcept {
        return std::hash<T>{}(s.value);
    }
};

template <typename T, typename Tag>
struct fmt::formatter<sluice::strong<T, Tag>> : fmt::formatter<T> {
    template <typename Context>
    auto format(const sluice::strong<T, Tag>& s, Context& ctx) const {
        return fmt::formatter<T>::format(s.value, ctx);
    }
};

template <>
struct fmt::formatter<sluice::offset> : fmt::formatter<std::int64_t> {
    template <typename Context>
    auto format(const sluice::offset& o, Context& ctx) const {
        return fmt::formatter<std::int64_t>::format(o.value, ctx);
    }
};

template <>
struct std::hash<sluice::offset> {
    std::size_t operator()(const sluice::offset& o) const noexcept {
        return std::hash<std::int64_t>{}(o.value);
    }
};
