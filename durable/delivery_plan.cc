// What a round trip of the poller carries, in this order: the results of
// finished handlers (ack, fail), starts of ready timers, releases, lease
// renewals, and claims. See delivery.h for the stages and the ground rules.

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "tickwheel/durable/delivery.h"

namespace tickwheel::durable::internal {
namespace {

// Timers claimed by one script call at most: a batch large enough to keep
// the round trips few when handlers are fast.
constexpr int kMaxClaimBatch = 512;
// A shard with a backlog is asked for this many due timers at least (when
// the budget allows), and a shard without one for this many at most while
// others have a backlog.
constexpr int kClaimTarget = 128;
constexpr int kColdProbe = 8;
// Payload bytes one claim call returns at most (it returns at least one
// timer, whatever its size).
constexpr int64_t kMaxClaimBytes = 1 << 20;

}  // namespace

void Delivery::PlanLocked(int64_t now, Batch* batch, int64_t* wake) {
  UpdateRateLocked(now);
  PlanResultsLocked(batch);
  if (!stopping_) PlanStartsLocked(batch);
  PlanReleasesLocked(now, batch, wake);
  PlanRenewalsLocked(now, batch, wake);
  if (!stopping_) PlanClaimsLocked(now, batch, wake);
  if (!stopping_) PlanProbeLocked(now, batch, wake);
}

void Delivery::PlanProbeLocked(int64_t now, Batch* batch, int64_t* wake) {
  if (!counters_->redis_full.load(std::memory_order_relaxed)) return;
  if (now < next_probe_) {
    *wake = std::min(*wake, next_probe_);
    return;
  }
  // INCRBY of 0 is refused on a full Redis like any write that may grow
  // memory, and changes nothing when accepted.
  Op op;
  op.probe = true;
  batch->commands.push_back({"INCRBY", (*options_.keys)[0].seq, "0"});
  batch->ops.push_back(std::move(op));
  next_probe_ = now + options_.poll_nanos;
}

void Delivery::AddOpsLocked(
    Script script, const std::map<int, std::vector<uint64_t>>& by_shard,
    Batch* batch) {
  const std::vector<ShardKeys>& keys = *options_.keys;
  for (const auto& [shard, items] : by_shard) {
    for (size_t first = 0; first < items.size(); first += kMaxScriptBatch) {
      const size_t last =
          std::min(items.size(), first + static_cast<size_t>(kMaxScriptBatch));
      Op op;
      op.script = script;
      op.shard = shard;
      op.items.assign(items.begin() + static_cast<ptrdiff_t>(first),
                      items.begin() + static_cast<ptrdiff_t>(last));
      std::vector<HeldRef> refs;
      refs.reserve(op.items.size());
      for (const uint64_t key : op.items) {
        Held& h = held_.at(key);
        h.in_flight = true;
        // A release of a started timer takes its attempt back: no handler
        // ran it.
        refs.push_back({h.id, h.version, h.due_us,
                        h.stage == Stage::kQueued || h.stage == Stage::kExpired,
                        h.error});
      }
      const ShardKeys& k = keys[static_cast<size_t>(shard)];
      switch (script) {
        case Script::kAck:
          batch->commands.push_back(AckCommand(k, refs));
          break;
        case Script::kFail:
          batch->commands.push_back(
              FailCommand(k, options_.backoff_us, options_.max_backoff_us,
                          options_.dead_retention_us, refs));
          break;
        case Script::kStart:
          batch->commands.push_back(StartCommand(k, options_.lease_us, refs));
          break;
        case Script::kRelease:
          batch->commands.push_back(ReleaseCommand(k, refs));
          break;
        case Script::kRenew:
          batch->commands.push_back(RenewCommand(k, options_.lease_us, refs));
          break;
        default:
          continue;  // not an item script
      }
      batch->ops.push_back(std::move(op));
    }
  }
}

void Delivery::PlanResultsLocked(Batch* batch) {
  std::map<int, std::vector<uint64_t>> acks, fails;
  for (const uint64_t key : done_) {
    const Held& h = held_.at(key);
    (h.ok ? acks : fails)[h.shard].push_back(key);
  }
  done_.clear();
  AddOpsLocked(Script::kAck, acks, batch);
  AddOpsLocked(Script::kFail, fails, batch);
}

void Delivery::UpdateRateLocked(int64_t now) {
  const int64_t elapsed = now - rate_mark_nanos_;
  if (elapsed < kRateSampleNanos) return;
  const double sample = static_cast<double>(completed_ - rate_mark_completed_) *
                        1e9 / static_cast<double>(elapsed);
  // Up at once, so that a burst of due timers finds the budget wide; down
  // by halves, so that one quiet sample does not starve fast handlers.
  finish_rate_ = sample >= finish_rate_ ? sample : (finish_rate_ + sample) / 2;
  rate_mark_nanos_ = now;
  rate_mark_completed_ = completed_;
}

// The handler threads, plus what they finish within kQueueHorizonNanos at
// their recent rate: fast handlers find the next timers started when they
// are done, a slow or stuck one has nothing started behind it.
int Delivery::StartTargetLocked() const {
  const double ahead =
      finish_rate_ * static_cast<double>(kQueueHorizonNanos) / 1e9;
  return std::min<int>(
      kMaxClaimBatch,
      options_.handler_threads + static_cast<int>(std::min(ahead, 1e6)));
}

void Delivery::PlanStartsLocked(Batch* batch) {
  int budget = StartTargetLocked() - running_ -
               static_cast<int>(queued_.size()) - starting_;
  std::map<int, std::vector<uint64_t>> starts;
  while (budget > 0 && !ready_.empty()) {
    const uint64_t key = ready_.front();
    ready_.pop_front();
    Held& h = held_.at(key);
    h.stage = Stage::kStarting;
    ++starting_;
    --budget;
    starts[h.shard].push_back(key);
  }
  AddOpsLocked(Script::kStart, starts, batch);
}

void Delivery::PlanReleasesLocked(int64_t now, Batch* batch, int64_t* wake) {
  std::map<int, std::vector<uint64_t>> releases;
  if (stopping_) {
    // Everything not started goes back: kStarting comes back from its round
    // trip as kQueued or gone, and is released then.
    for (const auto& [key, h] : held_) {
      if (!h.in_flight &&
          (h.stage == Stage::kWaiting || h.stage == Stage::kReady ||
           h.stage == Stage::kQueued || h.stage == Stage::kExpired)) {
        releases[h.shard].push_back(key);
      }
    }
    ready_.clear();
    queued_.clear();
    expired_.clear();
  } else {
    // Started, but no handler began it within its start window: released
    // unrun (the handler threads expire those they find; these are the
    // ones no thread came for).
    while (!queued_.empty()) {
      const Held& h = held_.at(queued_.front());
      if (h.start_by >= now) {
        *wake = std::min(*wake, h.start_by + 1);
        break;
      }
      ExpireLocked(queued_.front());
      queued_.pop_front();
    }
    for (const uint64_t key : expired_) {
      releases[held_.at(key).shard].push_back(key);
    }
    expired_.clear();
    // Ready for longer than a poll interval and still no handler: other
    // processes may have one.
    while (!ready_.empty()) {
      const Held& h = held_.at(ready_.front());
      if (h.ready_since + options_.poll_nanos > now) {
        *wake = std::min(*wake, h.ready_since + options_.poll_nanos);
        break;
      }
      releases[h.shard].push_back(ready_.front());
      ready_.pop_front();
    }
  }
  AddOpsLocked(Script::kRelease, releases, batch);
}

void Delivery::PlanRenewalsLocked(int64_t now, Batch* batch, int64_t* wake) {
  if (!clock_.known()) return;
  const int64_t redis_now = clock_.AtMostMicros(now);
  std::map<int, std::vector<uint64_t>> renewals;
  for (const auto& [key, h] : held_) {
    // Only running handlers' timers: one that waits (kWaiting, kReady,
    // kQueued) must not keep a lease that a busy or paused process cannot
    // honour; its lease runs from its due time or start.
    if (h.in_flight || h.lease_lost || h.stage != Stage::kRunning) continue;
    // Renew once half the lease may have passed.
    const int64_t renew_at = h.lease_us - options_.lease_us / 2;
    if (redis_now >= renew_at) {
      renewals[h.shard].push_back(key);
    } else {
      *wake = std::min(*wake, clock_.LocalWhenPossibly(renew_at));
    }
  }
  AddOpsLocked(Script::kRenew, renewals, batch);
}

void Delivery::PlanClaimsLocked(int64_t now, Batch* batch, int64_t* wake) {
  const int free = options_.max_in_flight - static_cast<int>(held_.size());
  if (free <= 0) return;  // a finished handler wakes the poller
  // Budgets, from what the handlers finish (target): due timers to keep
  // the handlers busy, and timers claimed ahead up to twice that in all,
  // so that a burst due at one instant is not all reserved by one process
  // that would then make it wait.
  const int target = StartTargetLocked();
  const int busy =
      static_cast<int>(ready_.size() + queued_.size()) + starting_ + running_;
  const int waiting = static_cast<int>(std::count_if(
      held_.begin(), held_.end(),
      [](const auto& kv) { return kv.second.stage == Stage::kWaiting; }));
  int due = std::clamp(target + 1 - busy, 0, free);
  int ahead = std::clamp(2 * target - busy - waiting, 0,
                         std::min(free - due, kMaxClaimBatch));
  int start = std::max(
      0, target - running_ - static_cast<int>(queued_.size()) - starting_);
  if (due + ahead == 0) return;
  // The shards to ask: those due for a look. Of those with a backlog,
  // only as many as the due budget fills with kClaimTarget timers each;
  // the others come in the next round trips, in turn.
  std::vector<int> cold, hot;
  for (int i = 0; i < shards_; ++i) {
    const int s = (rotation_ + i) % shards_;
    if (next_check_[static_cast<size_t>(s)] <= now) {
      (backlog_[static_cast<size_t>(s)] ? hot : cold).push_back(s);
    } else {
      *wake = std::min(*wake, next_check_[static_cast<size_t>(s)]);
    }
  }
  if (cold.empty() && hot.empty()) return;
  const size_t take_hot =
      std::min(hot.size(), static_cast<size_t>(std::max(
                               1, (due + kClaimTarget - 1) / kClaimTarget)));
  hot.resize(take_hot);
  rotation_ =
      (rotation_ + static_cast<int>(std::max<size_t>(1, take_hot))) % shards_;
  AskShardsLocked(now, cold, hot, {due, ahead, start}, batch);
}

void Delivery::AskShardsLocked(int64_t now, const std::vector<int>& cold,
                               const std::vector<int>& hot, ClaimBudget budget,
                               Batch* batch) {
  auto& [due, ahead, start] = budget;
  // A shard without a known backlog is probed for a share of the due
  // budget of at most kColdProbe; the shards with a backlog share the rest.
  std::vector<std::pair<int, ClaimArgs>> asks;
  const size_t n = cold.size() + hot.size();
  for (size_t i = 0; i < n; ++i) {
    const bool is_cold = i < cold.size();
    const int shard = is_cold ? cold[i] : hot[i - cold.size()];
    const int left = static_cast<int>(n - i);
    ClaimArgs args;
    args.lookahead_us = options_.lookahead_us;
    args.lease_us = options_.lease_us;
    args.due_quota = std::min((due + left - 1) / left, kMaxClaimBatch);
    if (is_cold && !hot.empty()) {
      args.due_quota = std::min(args.due_quota, kColdProbe);
    }
    args.ahead_quota = std::min((ahead + left - 1) / left, kMaxClaimBatch);
    args.start_quota = std::min((start + left - 1) / left, args.due_quota);
    args.max_bytes = kMaxClaimBytes;
    args.dead_retention_us = options_.dead_retention_us;
    due -= args.due_quota;
    ahead -= args.ahead_quota;
    start -= args.start_quota;
    if (args.due_quota + args.ahead_quota == 0) continue;
    asks.emplace_back(shard, args);
  }
  const std::vector<ShardKeys>& keys = *options_.keys;
  for (const auto& [shard, args] : asks) {
    Op op;
    op.script = Script::kClaim;
    op.shard = shard;
    op.claim = args;
    batch->commands.push_back(
        ClaimCommand(keys[static_cast<size_t>(shard)], args, options_.owner));
    batch->ops.push_back(std::move(op));
    // Not again before its reply says when.
    next_check_[static_cast<size_t>(shard)] = now + options_.poll_nanos;
  }
}

}  // namespace tickwheel::durable::internal
