// A backend: what every front of sluice stands on (owned by backend/api). The HTTP, WebSocket
// and SQS fronts and the Kafka front's handlers call these interfaces only, never an
// implementation; the one start-up file (gateway/server/server.cc) builds an implementation
// and hands its interfaces to the fronts.
//
//   fronts:  kafka handlers    http / ws / sse    sqs
//                  \                 |             /
//   api:       topics  records  groups  [transactions]  [queues]
//                  \                 |             /
//   backends:  native (backend/native: the embedded log)   upstream (a Kafka cluster, later)
//
// Every backend provides topics, records and groups. A capability not every backend has is an
// interface of its own that an implementation provides beside these (the native backend's
// transactions()); a front that needs it is handed it by the start-up file, and a backend that
// lacks it is never asked for it.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include "backend/api/groups.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"

namespace sluice::backend::api {

/// Lifecycle: an implementation opens (recovers) its state when it is built; start() begins
/// its background work; stop() is the first step of shutdown (parked calls are answered, so
/// that connections can finish); close() the last, once no front calls it any more (state is
/// made durable and released).
class backend {
  public:
    virtual ~backend() = default;

    virtual api::topics& topics() = 0;
    virtual api::records& records() = 0;
    virtual api::groups& groups() = 0;

    /// Starts timers and background work; `ex` is an executor they may run on.
    virtual void start(boost::asio::any_io_executor ex) = 0;
    virtual void stop() = 0;
    virtual void close() = 0;
};

}  // namespace sluice::backend::api
