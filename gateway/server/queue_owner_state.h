// Which gateway of a fleet serves the SQS queues (owned by gateway/server): the pure state
// machine of one gateway's ownership of one unit of queue state (today the whole state topic,
// partition 0 of _sluice_queue_state; later each of its partitions), with no I/O: what
// sqs_fleet does when the group's assignment changes, when a claim completes and when the
// cluster fences the gateway's writes.
//
//   follower --holds--> claiming --claimed--> serving
//       ^                  |                      |
//       +---- not held ----+----- not held -------+   (release: stop serving at once)
//       |                  |                      |
//       +-- not held -- deposed <---- fenced -----+   (a deposed gateway never claims again
//                                                       until the group takes the unit away)
//
// Every claim has a number: a claim that completes after the unit moved on is stale (what it
// built is dropped, never served). Concurrency: none (the caller locks).
#pragma once

#include <cstdint>

namespace sluice::gateway {

class queue_owner_state {
public:
    enum class phase : std::uint8_t { follower, claiming, serving, deposed };
    enum class action : std::uint8_t {
        none,
        claim,    // start claim number claim_id(): fence earlier owners, replay, then claimed()
        release,  // stop serving now and drop whatever a claim built
    };

    /// The group's assignment changed: `holds` when it is stable and gives this gateway the
    /// unit.
    action assignment_changed(bool holds) {
        holds_ = holds;
        if (holds) {
            if (phase_ == phase::follower) {
                phase_ = phase::claiming;
                ++claim_;
                return action::claim;
            }
            return action::none;
        }
        if (phase_ == phase::follower) {
            return action::none;
        }
        const bool was_active = phase_ == phase::claiming || phase_ == phase::serving;
        phase_ = phase::follower;
        ++claim_;
        return was_active ? action::release : action::none;
    }

    /// Claim `claim` completed: true when it is still the wanted one (serve what it built);
    /// false: it is stale, drop it.
    bool claimed(std::uint64_t claim) {
        if (claim != claim_ || phase_ != phase::claiming) {
            return false;
        }
        phase_ = phase::serving;
        return true;
    }

    /// Claim `claim` failed (the cluster could not be reached): claim again (a new number)
    /// while the unit is still held, else nothing.
    action claim_failed(std::uint64_t claim) {
        if (claim != claim_ || phase_ != phase::claiming) {
            return action::none;
        }
        if (!holds_) {
            phase_ = phase::follower;
            return action::none;
        }
        ++claim_;
        return action::claim;
    }

    /// The cluster refused a write of claim `claim`'s state as fenced: a newer owner exists.
    /// A stale claim's refusal changes nothing.
    action fenced(std::uint64_t claim) {
        if (claim != claim_ || (phase_ != phase::claiming && phase_ != phase::serving)) {
            return action::none;
        }
        phase_ = phase::deposed;
        ++claim_;
        return action::release;
    }

    phase current() const { return phase_; }
    bool serving() const { return phase_ == phase::serving; }
    std::uint64_t claim_id() const { return claim_; }

private:
    phase phase_ = phase::follower;
    bool holds_ = false;
    std::uint64_t claim_ = 0;
};

}  // namespace sluice::gateway
