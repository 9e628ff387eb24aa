// What a Kafka request touches, as its handler's `declare` step states it (handlers/registry.h),
// and what the policy chain decided for each entry. Plain data: no connection, no services, so
// a unit test or the Kafka proxy can build the list from a decoded request alone.
//
// A declare step appends accesses in a fixed order the handler knows (e.g. Produce: WRITE on
// the transactional id when set, then WRITE on each topic in request order). Two links between
// entries keep Kafka's order of checks, and so the audit log's lines, exactly as they were:
//   only_if k  decided only when entry k was allowed; otherwise `skipped` (Produce's topics
//              after a refused transactional id: Kafka answers the id's error and checks none)
//   unless k   allowed without a decision when entry k was allowed (CreateTopics: CREATE on
//              the topic is asked only of a principal without CREATE on the cluster)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "auth/authorizer.h"
#include "protocol/core/assert.h"

namespace sluice::gateway {

/// What a denial means for the request.
enum class access_mode : std::uint8_t {
    refuse,  // the client gets this resource's authorization error; the denial is audited
    quiet,   // a precondition or a listing: a denial is not reported
};

inline constexpr std::uint16_t no_access = 0xffff;

/// One access: operation x resource type x name. `name` views the decoded request, which
/// outlives the decision (the dispatcher decides before the handler takes the request).
struct kafka_access {
    auth::acl_operation op = auth::acl_operation::unknown;
    auth::resource_type type = auth::resource_type::unknown;
    std::string_view name;
    access_mode mode = access_mode::refuse;
    std::uint16_t only_if = no_access;
    std::uint16_t unless = no_access;
    /// "Some resource of this type": allowed when any ACL lets the principal do `op` on a
    /// resource of `type` (InitProducerId without a transactional id: WRITE on any topic).
    bool any_name = false;
    /// The name is not known before the backend answers: not decided with the others.
    bool later = false;
    /// Nothing to decide: always allowed (add_unchecked).
    bool unchecked = false;

    friend bool operator==(const kafka_access&, const kafka_access&) = default;
};

/// The list a declare step fills. Its storage is reused from request to request (see
/// kafka_policy.cc); a declare step only appends.
class access_list {
public:
    /// Appends an access and returns its index.
    std::uint16_t add(auth::acl_operation op, auth::resource_type type, std::string_view name,
                      access_mode mode = access_mode::refuse) {
        items_.push_back({op, type, name, mode});
        return static_cast<std::uint16_t>(items_.size() - 1);
    }
    std::uint16_t add_cluster(auth::acl_operation op, access_mode mode = access_mode::refuse) {
        return add(op, auth::resource_type::cluster, auth::cluster_resource_name, mode);
    }
    /// An access whose name only the backend's answer gives (Fetch v13+ names topics by id):
    /// it keeps its place in the list, the chain leaves it `skipped`, and the handler decides
    /// it later (decide_late in kafka_policy.h) once it knows the name.
    std::uint16_t add_later(auth::acl_operation op, auth::resource_type type) {
        items_.push_back({op, type, {}, access_mode::refuse, no_access, no_access, false, true});
        return static_cast<std::uint16_t>(items_.size() - 1);
    }
    /// A request entry no ACL covers (a repeated topic refused before any check, a config
    /// resource of a type Kafka does not check): it keeps its place and is always allowed.
    std::uint16_t add_unchecked() {
        items_.push_back({});
        items_.back().unchecked = true;
        return static_cast<std::uint16_t>(items_.size() - 1);
    }
    /// "Some resource of `type`" (see kafka_access::any_name).
    std::uint16_t add_any(auth::acl_operation op, auth::resource_type type,
                          access_mode mode = access_mode::refuse) {
        items_.push_back({op, type, {}, mode, no_access, no_access, true});
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

enum class verdict : std::uint8_t {
    allowed,
    denied,
    skipped,  // not decided: its only_if entry was refused, or it is decided later
};

/// The chain's answer per declared access, by index. Without an authorizer nothing was
/// declared and every index is allowed. Up to 16 verdicts live inline (no allocation).
class access_verdicts {
public:
    /// No authorizer: every access is allowed.
    static access_verdicts all_allowed() { return access_verdicts(); }

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
    std::size_t size() const { return v_.size(); }
    /// Whether the chain ran (an authorizer is on).
    bool decided() const { return decided_; }

private:
    boost::container::small_vector<verdict, 16> v_;
    bool decided_ = false;
};

}  // namespace sluice::gateway
