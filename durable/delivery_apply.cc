// The replies of the poller's round trips: what each script answered for
// each timer it carried, and what a failed round trip puts back. See
// delivery.h for the stages and the ground rules.

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/durable/delivery.h"
#include "tickwheel/timer/clock.h"
#include "tickwheel/timer/log.h"

namespace tickwheel::durable::internal {
namespace {

// A shard that answered "nothing more now" is asked again no sooner than
// this, so that a timer due within the look-ahead that no quota could take
// does not make the poller spin.
constexpr int64_t kMinRecheckNanos = 1'000'000;

}  // namespace

bool Delivery::ApplyLocked(Batch& batch, std::vector<RedisReply>& replies,
                           int64_t before, int64_t after,
                           RedisSession& session) {
  bool all_ok = true;
  for (size_t i = 0; i < batch.ops.size(); ++i) {
    const Op& op = batch.ops[i];
    RedisReply& reply = replies[i];
    absl::Status status;
    if (op.probe) {
      if (reply.IsErrorCode("OOM")) {
        counters_->Oom(session.endpoint().ToString());
      } else if (!reply.is_error()) {
        counters_->Room(session.endpoint().ToString());
      }
      continue;
    }
    if (reply.IsErrorCode("OOM")) {
      counters_->Oom(session.endpoint().ToString());
    }
    if (reply.is_error()) {
      status =
          ReplyErrorStatus(reply, ScriptName(op.script), session.endpoint());
    } else if (op.script == Script::kClaim) {
      absl::StatusOr<ClaimReply> claim = ParseClaimReply(std::move(reply));
      if (claim.ok()) {
        clock_.Observe(claim->now_us, before, after);
        ApplyClaimLocked(op, *claim, before, after);
        continue;
      }
      status = claim.status();
    } else {
      absl::StatusOr<BatchReply> items =
          ParseBatchReply(reply, op.items.size());
      if (items.ok()) {
        clock_.Observe(items->now_us, before, after);
        if (op.script == Script::kStart) {
          ApplyStartLocked(op, *items, before, after);
        } else {
          ApplyItemsLocked(op, *items);
        }
        continue;
      }
      status = items.status();
    }
    session.CountErrorReply();
    if (all_ok) {
      Log(LogSeverity::kWarning, fmt::format("durable timers: {}; retrying",
                                             std::string(status.message())));
    }
    all_ok = false;
    UndoLocked(op);
  }
  return all_ok;
}

void Delivery::ApplyClaimLocked(const Op& op, const ClaimReply& reply,
                                int64_t before, int64_t after) {
  for (const ClaimedTimer& t : reply.timers) {
    const uint64_t key = next_key_++;
    Held& h = held_[key];
    h.shard = op.shard;
    h.id = t.id;
    h.payload = t.payload;
    h.version = t.version;
    h.attempt = t.attempt;
    h.deadline_us = t.deadline_us;
    h.due_us = t.due_us;
    h.lease_us = t.lease_us;
    const int64_t due = std::max(t.due_us, t.deadline_us);
    if (t.started) {
      QueueLocked(key, h, before);
    } else if (due <= reply.now_us) {
      h.stage = Stage::kReady;
      h.ready_since = after;
      ready_.push_back(key);
    } else {
      HoldLocked(key, h, due);
    }
  }
  if (reply.dead_lettered > 0) {
    counters_->Add(counters_->dead_lettered, reply.dead_lettered);
    Log(LogSeverity::kWarning,
        fmt::format("durable timers: {} timer(s) of shard {} were out of "
                    "attempts when their lease ended unacknowledged, and "
                    "were dead-lettered",
                    reply.dead_lettered, op.shard));
  }
  int64_t next = after + options_.poll_nanos;
  backlog_[static_cast<size_t>(op.shard)] = reply.more;
  if (reply.more) {
    next = after;
  } else if (reply.next_us >= 0) {
    const int64_t ahead = op.claim.ahead_quota > 0 ? options_.lookahead_us : 0;
    next = std::clamp(clock_.LocalWhenSurely(reply.next_us - ahead),
                      after + kMinRecheckNanos, next);
  }
  int64_t& hint = scheduled_hint_[static_cast<size_t>(op.shard)];
  next_check_[static_cast<size_t>(op.shard)] = std::min(next, hint);
  hint = INT64_MAX;
}

void Delivery::ApplyStartLocked(const Op& op, const BatchReply& reply,
                                int64_t before, int64_t after) {
  for (size_t i = 0; i < op.items.size(); ++i) {
    const uint64_t key = op.items[i];
    Held& h = held_.at(key);
    h.in_flight = false;
    --starting_;
    const int64_t r = reply.results[i];
    if (r > 0) {
      h.attempt = static_cast<int>(r);
      h.lease_us = reply.now_us + options_.lease_us;
      QueueLocked(key, h, before);
    } else if (r < 0) {
      // Not yet due on Redis's clock (this process's estimate ran ahead):
      // hold it again, a millisecond at least.
      HoldLocked(key, h,
                 std::max({h.due_us, h.deadline_us,
                           clock_.AtLeastMicros(after + kMinRecheckNanos)}));
    } else {
      EraseLocked(key);  // cancelled, replaced, or claimed by another
    }
  }
}

void Delivery::ApplyItemsLocked(const Op& op, const BatchReply& reply) {
  for (size_t i = 0; i < op.items.size(); ++i) {
    const uint64_t key = op.items[i];
    const int64_t r = reply.results[i];
    switch (op.script) {
      case Script::kAck:
        if (r == 1) counters_->Add(counters_->acknowledged);
        EraseLocked(key);
        break;
      case Script::kFail:
        if (r == 2) {
          const Held& h = held_.at(key);
          counters_->Add(counters_->dead_lettered);
          Log(LogSeverity::kWarning,
              fmt::format("durable timer \"{}\" failed its last attempt ({}) "
                          "and was dead-lettered: {}",
                          h.id, h.attempt, h.error));
        }
        EraseLocked(key);
        break;
      case Script::kRelease:
        EraseLocked(key);
        break;
      case Script::kRenew: {
        Held& h = held_.at(key);
        h.in_flight = false;
        if (r > 0) {
          h.lease_us = r;
        } else if (!h.lease_lost) {
          // Lost: the lease ended and the timer was claimed again, or it
          // was cancelled or replaced. Its acknowledgement will be ignored.
          h.lease_lost = true;
          if (h.stage == Stage::kRunning) {
            Log(LogSeverity::kWarning,
                fmt::format("durable timer \"{}\" (attempt {}): its handler "
                            "outlived a lease this process could not renew; "
                            "another process may deliver it, and this "
                            "delivery's result is ignored",
                            h.id, h.attempt));
          }
        }
        break;
      }
      default:
        break;
    }
  }
}

void Delivery::UndoLocked(const Op& op) {
  for (const uint64_t key : op.items) {
    auto it = held_.find(key);
    if (it == held_.end()) continue;
    Held& h = it->second;
    h.in_flight = false;
    switch (op.script) {
      case Script::kStart:
        h.stage = Stage::kReady;
        --starting_;
        ready_.push_front(key);
        break;
      case Script::kAck:
      case Script::kFail:
        done_.push_back(key);
        break;
      case Script::kRelease:
        // Stop() releases whatever is not in flight on every plan; a
        // release of a timer that waited too long for a handler goes back
        // to the ready queue, one past its start window to be released
        // again.
        if (!stopping_ && h.stage == Stage::kReady) ready_.push_front(key);
        if (!stopping_ && h.stage == Stage::kExpired) expired_.push_back(key);
        break;
      default:
        break;
    }
  }
}

}  // namespace tickwheel::durable::internal
