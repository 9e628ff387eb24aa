#include "gateway/kafka/throttle.h"

#include <algorithm>
#include <limits>

#include "gateway/policy/quota_meter.h"

namespace sluice::gateway {
namespace {

std::int32_t apply(request_context& ctx, std::chrono::milliseconds ms,
                   std::int16_t kip219_version) {
    if (ms.count() <= 0) {
        return 0;
    }
    ctx.throttle(ms, ctx.version() < kip219_version);
    return static_cast<std::int32_t>(std::min<std::int64_t>(ms.count(), INT32_MAX));
}

}  // namespace

std::int32_t record_quota(request_context& ctx, auth::quota_kind kind, double amount,
                          std::int16_t kip219_version) {
    quota_meter* q = ctx.svc().quotas;
    if (q == nullptr || !q->any()) {
        return 0;
    }
    return apply(ctx, q->record(quota_front::kafka, kind, ctx.principal(), ctx.client_id(), amount),
                 kip219_version);
}

std::int32_t throttled_already(request_context& ctx, auth::quota_kind kind,
                               std::int16_t kip219_version) {
    quota_meter* q = ctx.svc().quotas;
    if (q == nullptr || !q->any()) {
        return 0;
    }
    return apply(ctx, q->throttled_now(quota_front::kafka, kind, ctx.principal(), ctx.client_id()),
                 kip219_version);
}

std::int32_t record_request_time(request_context& ctx) {
    quota_meter* q = ctx.svc().quotas;
    if (q == nullptr || ctx.busy() == nullptr) {
        return 0;
    }
    // Since KIP-219 every API answers its throttle time at once and the broker then mutes the
    // connection: no response is delayed for the request quota.
    const auto ms = q->record_request_time(quota_front::kafka, ctx.principal(), ctx.client_id(),
                                           ctx.busy()->total());
    return apply(ctx, ms, std::numeric_limits<std::int16_t>::min());
}

std::optional<double> quota_headroom(request_context& ctx, auth::quota_kind kind) {
    quota_meter* q = ctx.svc().quotas;
    if (q == nullptr || !q->any()) {
        return std::nullopt;
    }
    return q->headroom(kind, ctx.principal(), ctx.client_id());
}

}  // namespace sluice::gateway
