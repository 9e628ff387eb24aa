// What a Kafka request touches, as its handler's `declare` step states it (handlers/registry.h),
// and what the policy chain (gateway/policy/chain.h) decided for each entry. Plain data: no
// connection, no services, so a unit test or the Kafka proxy can build the list from a decoded
// request alone. The words are the chain's: on_denial, also_passes, verdict.
//
// A declare step appends accesses in a fixed order the handler knows (e.g. Produce: WRITE on
// the transactional id when set, then WRITE on each topic in request order), and the handler
// reads the verdict of entry i back by index. Two links between entries keep Kafka's order of
// checks, and so the audit log's lines, exactly as they were:
//   only_if k  decided only when entry k was allowed; otherwise `unchecked` (Produce's topics
//              after a refused transactional id: Kafka answers the id's error and checks none)
//   unless k   allowed without a decision when entry k was allowed (OffsetForLeaderEpoch: a
//              follower's quiet CLUSTER_ACTION lets it describe every topic)
// Two kinds of entry only keep a place: `later` (the name comes with the backend's answer, the
// handler decides it then: decide_late) and `none` (a request entry no ACL covers: allowed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "auth/authorizer.h"
#include "gateway/policy/chain.h"
#include "protocol/core/assert.h"

namespace sluice::gateway {

inline constexpr std::uint16_t no_access = 0xffff;

/// One access: operation x resource type x name. `name` views the decoded request, which
/// outlives the decision (the dispatcher decides before the handler takes the request).
struct kafka_access {
    auth::acl_operation op = auth::acl_operation::unknown;
    auth::resource_type type = auth::resource_type::unknown;
    std::string_view name{};
    on_denial denial = on_denial::refuse;
    also_passes alternative = also_passes::nothing;
    std::uint16_t only_if = no_access;
    std::uint16_t unless = no_access;
    /// The name is not known before the backend answers: left unchecked, decided by the
    /// handler (add_later).
    bool later = false;
    /// Nothing to decide: always allowed (add_none).
    bool none = false;

    friend bool operator==(const kafka_access&, const kafka_access&) = default;
};

/// The list a declare step fills. The dispatcher reuses its storage from request to request
/// (reusable_access_list in kafka_policy.h); a declare step only appends.
class access_list {
public:
    /// Appends an access and returns its index.
    std::uint16_t add(auth::acl_operation op, auth::resource_type type, std::string_view name,
                      on_denial denial = on_denial::refuse,
                      also_passes alternative = also_passes::nothing) {
        items_.push_back({op, type, name, denial, alternative});
        return static_cast<std::uint16_t>(items_.size() - 1);
    }
    std::uint16_t add_cluster(auth::acl_operation op, on_denial denial = on_denial::refuse,
                              also_passes alternative = also_passes::nothing) {
        return add(op, auth::resource_type::cluster, auth::cluster_resource_name, denial,
                   alternative);
    }
    /// An access whose name only the backend's answer gives (Fetch v13+ names topics by id):
    /// it keeps its place, the chain leaves it unchecked, and the handler decides it once it
    /// knows the name (decide_late in kafka_policy.h).
    std::uint16_t add_later(auth::acl_operation op, auth::resource_type type) {
        kafka_access a;
        a.op = op;
        a.type = type;
        a.later = true;
        items_.push_back(a);
        return static_cast<std::uint16_t>(items_.size() - 1);
    }
    /// A request entry no ACL covers (a repeated topic refused before any check, a config
    /// resource of a type Kafka does not check): it keeps its place and is always allowed.
    std::uint16_t add_none() {
        items_.emplace_back();
        items_.back().none = true;
        return static_cast<std::uint16_t>(items_.size() - 1);
    }
    /// The last access added is decided only when `gate` was allowed.
    void only_if(std::uint16_t gate) { items_.back().only_if = gate; }
    /// The last access added is allowed without a decision when `alternative` was allowed.
    void unless(std::uint16_t alternative) { items_.back().unless = alternative; }

    const std::vector<kafka_access>& items() const { return items_; }
    std::size_t size() const { return items_.size(); }
    bool empty() const { return items_.empty(); }
    const kafka_access& operator[](std::size_t i) const { return items_[i]; }
    void clear() { items_.clear(); }
    void reserve(std::size_t n) { items_.reserve(n); }

private:
    std::vector<kafka_access> items_;
};

/// The chain's answer per declared access, by index. Without an authorizer nothing was
/// declared and every index is allowed. Up to 16 verdicts live inline (no allocation).
class access_verdicts {
public:
    void push_back(verdict v) {
        decided_ = true;
        v_.push_back(v);
    }
    void reserve(std::size_t n) { v_.reserve(n); }
    /// Whether access `i` may go on (always, without an authorizer).
    bool allowed(std::size_t i) const { return at(i) == verdict::allowed; }
    bool denied(std::size_t i) const { return at(i) != verdict::allowed; }
    verdict at(std::size_t i) const {
        if (!decided_) {
            return verdict::allowed;
        }
        SLUICE_CHECK(i < v_.size());  // a handler reading an index its declare step never gave
        return v_[i];
    }
    void set(std::size_t i, verdict v) { v_[i] = v; }
    std::size_t size() const { return v_.size(); }
    /// Whether the chain ran (an authorizer is on and something was declared).
    bool decided() const { return decided_; }

private:
    boost::container::small_vector<verdict, 16> v_;
    bool decided_ = false;
};

}  // namespace sluice::gateway
