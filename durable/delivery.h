// durable/delivery.h
// -----------------------------------------------------------------------------
// Internal. Delivery: what DurableTimer::Start() runs in a process -- a
// poller thread that talks to Redis, a pool of handler threads, a local
// tickwheel::Timer that holds timers claimed ahead of their deadline, and
// (with schedule hints) a HintListener that says when another process
// scheduled a timer due before the next poll (hint_listener.h).
//
// A claimed timer's life in this process (Held::stage):
//
//   claim ──> kWaiting ──(local Timer: due, on the lower bound of Redis's
//     │           clock)──> kReady ──(start script: due on Redis's clock,
//     │                        │      still ours)──> kQueued ──> kRunning
//     │                        └── not yet: kWaiting again; gone: dropped
//     ├─(already due, within the start budget: started by the claim)
//     │     ──> kQueued
//     └─(already due, beyond it)──> kReady
//   kQueued ──(no handler began it within the start window)──> kExpired
//   kRunning ──(handler returns)──> kDone ──(ack or fail script)──> dropped
//   kWaiting, kReady, kQueued, kExpired ──(Stop(), kReady waiting longer
//     than poll_interval for a handler, or kExpired)──(release script)
//     ──> dropped
//
// Only Redis decides: a timer starts when the start (or claim) script, on
// Redis's clock, finds it due and still held under this claim's version. So
// a cancel, a replacement or another process's claim that Redis saw first
// wins, and no start is early, whatever the local clock says.
//
// A start is a promise to run the handler now. Redis counts a delivery as
// running from its start on (a Cancel() after it finds it running, and the
// delivery finishes), so a started timer must not wait in this process: not
// behind a busy handler (the cancel or replacement that came meanwhile
// would lose to a copy that has not begun), and not across a pause of the
// process (its lease may have passed to another process meanwhile). Hence:
//   - the start budget: Redis is asked to start only as many timers as the
//     handler threads will take at once -- the idle threads, plus what the
//     threads finish within kQueueHorizon at the rate they have been
//     finishing (so that fast handlers never wait for a round trip, and a
//     slow or stuck handler gets nothing queued behind it);
//   - the start window: a started timer that no handler thread has begun
//     within the start window of the round trip that started it (local
//     monotonic time, which runs on while the process is paused) is not
//     run: it becomes kExpired and is released with its attempt taken back,
//     due at once for any process. So a handler begins within the start
//     window of its start in Redis, or never.
// Claimed timers that are not started (kWaiting, kReady) are not renewed:
// their lease runs from their due time, a kReady one goes back after a poll
// interval without a handler, and only running handlers' leases are kept.
//
// Ground rules (mu_ guards every field marked ABSL_GUARDED_BY):
//   - The poller thread alone plans round trips and applies their replies;
//     it takes mu_ to plan (marking the items a round trip carries
//     in_flight), releases it for the round trip, and takes it again to
//     apply. An in_flight item's stage changes only as the handler threads
//     move it (kQueued -> kRunning -> kDone), never by another plan.
//   - Handler threads take kQueued items (never after stopping_): one
//     past its start_by becomes kExpired for the poller to release; the
//     others they run without mu_, and hand the result back as kDone.
//   - The local Timer's tasks move kWaiting items to kReady, under mu_; an
//     item whose hold ended (hold_seq) or that is in flight is left alone.
//   - The hint listener's thread (HintListener, when schedule hints are
//     on) only lowers next_check_ and scheduled_hint_, under mu_, through
//     Scheduled() and Rescan(), and wakes the poller; Stop() joins it
//     before the poller's last round trips.
//   - Leases: the poller renews the lease of every running handler's
//     timer once half of it may have passed (the upper bound of Redis's
//     clock), so a handler may outlive the lease it started with. If renewing
//     fails (Redis unreachable, the process paused), the lease ends, another
//     process may deliver the timer, and this process's acknowledgement is
//     then ignored (the version moved on).
//   - Stop(): stopping_ under mu_; the local Timer is stopped; handler
//     threads finish their handler and exit; the poller releases what was
//     not started, sends the results, and exits when it holds nothing (or,
//     with Redis down, once no handler runs and one more round trip failed).

#ifndef TICKWHEEL_DURABLE_DELIVERY_H_
#define TICKWHEEL_DURABLE_DELIVERY_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "tickwheel/durable/counters.h"
#include "tickwheel/durable/hint_listener.h"
#include "tickwheel/durable/keys.h"
#include "tickwheel/durable/mutex.h"
#include "tickwheel/durable/redis_clock.h"
#include "tickwheel/durable/redis_session.h"
#include "tickwheel/durable/shard_ops.h"
#include "tickwheel/timer/log.h"
#include "tickwheel/timer/timer.h"

namespace tickwheel::durable::internal {

struct DeliveryOptions {
  const std::vector<ShardKeys>* keys = nullptr;  // one per shard
  const SessionOptions* session = nullptr;
  std::string owner;
  int64_t lease_us = 0;
  int64_t poll_nanos = 0;
  int64_t lookahead_us = 0;  // claim this far ahead of a deadline
  int64_t timeout_nanos = 0;
  int max_in_flight = 0;
  int handler_threads = 0;
  int64_t backoff_us = 0;
  int64_t max_backoff_us = 0;
  int64_t dead_retention_us = 0;  // 0: dead letters are kept
  // The keyspace's hint channel (HintChannel()): a HintListener hands its
  // hints to Scheduled(). Empty: no listener (schedule_hints off).
  std::string hint_channel;
};

// A handler's failure is recorded with its timer up to this many bytes.
inline constexpr size_t kMaxErrorBytes = 1024;

// A started timer that no handler thread has begun within this long of the
// round trip that started it is released unrun (see the file comment); at
// most half the lease. Long enough for a round trip to a loaded Redis and
// for the queue the start budget allows to drain on a machine whose cores
// Redis and other processes share (docs/DURABLE.md).
inline constexpr int64_t kStartWindowNanos = 50'000'000;
// The start budget allows, beyond the idle handler threads, what the
// threads finish in this long at the rate they have been finishing.
inline constexpr int64_t kQueueHorizonNanos = 10'000'000;
// That rate is sampled at most this often.
inline constexpr int64_t kRateSampleNanos = 5'000'000;

// One delivery, as the handler receives it (DurableTimer turns it into a
// FiredTimer, moving the strings).
struct Delivered {
  std::string id;
  std::string payload;
  int64_t deadline_us = 0;
  int attempt = 0;
};

class Delivery {
 public:
  using Handler = std::function<absl::Status(Delivered&)>;

  Delivery(DeliveryOptions options, Counters* counters, Handler handler);
  ~Delivery();  // Stop()

  // Creates the local Timer and starts the threads. ResourceExhausted when
  // either cannot be made (nothing is left running then).
  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // See the file comment; idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Whether the calling thread is running a handler of this delivery.
  bool InHandler() const;

  // A timer of `shard` due at `due_us` was scheduled, by this process or
  // (a hint) by another: look at the shard in time for it (no need to wait
  // for the next poll).
  void Scheduled(int shard, int64_t due_us) ABSL_LOCKS_EXCLUDED(mu_);
  // Hints may have been lost (the hint listener subscribed again): look at
  // every shard now.
  void Rescan() ABSL_LOCKS_EXCLUDED(mu_);
  // Timer `id` was cancelled by this process: drop the copies it holds that
  // have not started (Redis would refuse to start them anyway).
  void Cancelled(std::string_view id) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class Stage {
    kWaiting,
    kReady,
    kStarting,
    kQueued,
    kExpired,
    kRunning,
    kDone
  };

  struct Held {
    int shard = 0;
    std::string id;
    std::string payload;  // moved into the FiredTimer when it starts
    int64_t version = 0;
    int attempt = 0;
    int64_t deadline_us = 0;
    int64_t due_us = 0;
    int64_t lease_us = 0;     // lease end on Redis's clock, as last known
    bool lease_lost = false;  // a renewal found it gone: renew no more
    Stage stage = Stage::kWaiting;
    bool in_flight = false;   // carried by the round trip under way
    bool ok = false;          // kDone: the handler's result
    std::string error;        // kDone, not ok: the status, for the record
    int64_t ready_since = 0;  // kReady: local time it became ready
    // kQueued: the local time by which a handler must begin it (the start
    // window after the round trip that started it was sent).
    int64_t start_by = 0;
    uint64_t hold_seq = 0;  // kWaiting: which local Timer task may wake it
  };

  // One script call of a round trip and the items it carries.
  struct Op {
    Script script = Script::kMeta;  // unread for a probe
    int shard = 0;
    std::vector<uint64_t> items;
    ClaimArgs claim;     // kClaim
    bool probe = false;  // not a script: does Redis accept writes again?
  };
  struct Batch {
    std::vector<Op> ops;
    std::vector<RedisCommand> commands;
    bool empty() const { return ops.empty(); }
  };

  // The poller's round trips failed in a row, and when it may try again.
  struct Retry {
    int64_t backoff = 0;
    int64_t at = 0;
    int failures = 0;
  };
  // What a round trip's outcome leaves the poller to do outside the lock.
  struct Settled {
    std::string log;  // empty: nothing to log
    LogSeverity severity = LogSeverity::kInfo;
    size_t abandoned = 0;
    bool give_up = false;  // Stop() with Redis unreachable: the poller ends
  };

  void PollerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Counts and logs (once per run of them) round trips whose results fewer
  // than min_replicas_acked replicas confirmed; `replicas_short` is the
  // poller's: whether the last one fell short.
  void NoteReplicas(const ReplicaAck& ack, bool* replicas_short);
  // Waits until a round trip is due and plans it into `batch`; false when
  // the poller is done (stopping, nothing held).
  bool NextBatch(int64_t retry_at, Batch* batch) ABSL_LOCKS_EXCLUDED(mu_);
  // Applies a round trip's replies (or undoes it when `status` failed) and
  // moves the back-off.
  Settled Settle(Batch& batch, absl::Status status,
                 std::vector<RedisReply>& replies, int64_t before,
                 int64_t after, RedisSession& session, Retry* retry)
      ABSL_LOCKS_EXCLUDED(mu_);
  void HandlerLoop(int index) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status RunHandler(Delivered& delivered);

  // delivery_plan.cc: what the next round trip carries, and the local time
  // the poller should look again if it carries nothing (`*wake`).
  void PlanLocked(int64_t now, Batch* batch, int64_t* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PlanResultsLocked(Batch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PlanReleasesLocked(int64_t now, Batch* batch, int64_t* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PlanStartsLocked(Batch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PlanRenewalsLocked(int64_t now, Batch* batch, int64_t* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PlanClaimsLocked(int64_t now, Batch* batch, int64_t* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PlanProbeLocked(int64_t now, Batch* batch, int64_t* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How many timers a claim round may take: due now, ahead of their
  // deadlines, and to start at once.
  struct ClaimBudget {
    int due = 0;
    int ahead = 0;
    int start = 0;
  };
  // Shares `budget` among the shards to ask (`cold`: no known backlog) and
  // adds one claim op per shard.
  void AskShardsLocked(int64_t now, const std::vector<int>& cold,
                       const std::vector<int>& hot, ClaimBudget budget,
                       Batch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds `script` ops for `by_shard` (shard -> item keys), at most
  // kMaxScriptBatch items each, and marks the items in flight.
  void AddOpsLocked(Script script,
                    const std::map<int, std::vector<uint64_t>>& by_shard,
                    Batch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // delivery_apply.cc: the replies of a round trip that succeeded, or
  // putting its items back when it failed.
  // True when every reply was a result (an error reply undoes its op).
  bool ApplyLocked(Batch& batch, std::vector<RedisReply>& replies,
                   int64_t before, int64_t after, RedisSession& session)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyClaimLocked(const Op& op, const ClaimReply& reply, int64_t before,
                        int64_t after) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyStartLocked(const Op& op, const BatchReply& reply, int64_t before,
                        int64_t after) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues `key`, started by a round trip sent at `sent`, for a handler.
  void QueueLocked(uint64_t key, Held& h, int64_t sent)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyItemsLocked(const Op& op, const BatchReply& reply)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UndoLocked(const Op& op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops everything still held (Stop() with Redis down); returns how many.
  size_t AbandonLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Holds `key` (kWaiting) in the local Timer until Redis's clock surely
  // reads `due_us`.
  void HoldLocked(uint64_t key, Held& h, int64_t due_us)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnHoldExpired(uint64_t key, uint64_t hold_seq) ABSL_LOCKS_EXCLUDED(mu_);
  void EraseLocked(uint64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks `key` (kQueued) kExpired: released unrun, its attempt taken back.
  void ExpireLocked(uint64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The start budget's target: kQueued, kStarting and kRunning items this
  // process may have at once (see the file comment).
  int StartTargetLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Samples the rate at which handlers finish.
  void UpdateRateLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DeliveryOptions options_;
  Counters* const counters_;
  const Handler handler_;
  const int shards_;
  // The start window: min(kStartWindowNanos, half the lease).
  const int64_t start_window_nanos_;

  std::unique_ptr<Timer> hold_timer_;  // set by Start(), stopped by Stop()
  // Set by Start() when options_.hint_channel is set; stopped first by
  // Stop(). Its thread calls Scheduled() and Rescan().
  std::unique_ptr<HintListener> hints_;
  std::thread poller_;
  std::vector<std::thread> handlers_;
  Mutex stop_mu_;  // serialises Start() and Stop()
  bool started_ ABSL_GUARDED_BY(stop_mu_) = false;
  bool joined_ ABSL_GUARDED_BY(stop_mu_) = false;

  mutable Mutex mu_;
  std::condition_variable_any poll_cv_;  // wakes the poller
  std::condition_variable_any work_cv_;  // wakes handler threads
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::unordered_map<uint64_t, Held> held_ ABSL_GUARDED_BY(mu_);
  uint64_t next_key_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_hold_seq_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<uint64_t> ready_ ABSL_GUARDED_BY(mu_);     // kReady, oldest first
  std::deque<uint64_t> queued_ ABSL_GUARDED_BY(mu_);    // kQueued, by start_by
  std::vector<uint64_t> expired_ ABSL_GUARDED_BY(mu_);  // kExpired
  std::vector<uint64_t> done_ ABSL_GUARDED_BY(mu_);     // kDone
  int starting_ ABSL_GUARDED_BY(mu_) = 0;               // kStarting
  int running_ ABSL_GUARDED_BY(mu_) = 0;                // kRunning
  // Handlers done since Start(), and the rate at which they finish
  // (per second), sampled at least kRateSampleNanos apart.
  int64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t rate_mark_nanos_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t rate_mark_completed_ ABSL_GUARDED_BY(mu_) = 0;
  double finish_rate_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int64_t> next_check_ ABSL_GUARDED_BY(mu_);  // per shard, local
  // Per shard: the earliest next_check_ a Scheduled() or Rescan() asked for
  // since the shard's last claim was applied, so that a claim reply (which sets
  // next_check_ from what Redis said) cannot overwrite a timer scheduled
  // while the claim was in flight. INT64_MAX: none.
  std::vector<int64_t> scheduled_hint_ ABSL_GUARDED_BY(mu_);
  int rotation_ ABSL_GUARDED_BY(mu_) = 0;  // first shard of the next claim
  // Per shard: its last claim said more were due at once. A round trip
  // gives its budget to a few such shards, in turn, rather than a sliver
  // to each: a script's fixed cost is then shared by many timers.
  std::vector<bool> backlog_ ABSL_GUARDED_BY(mu_);
  RedisClock clock_ ABSL_GUARDED_BY(mu_);
  // While Redis is believed full (Counters::redis_full), the local time of
  // the next probe: a write that grows nothing, once per poll interval.
  int64_t next_probe_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_DELIVERY_H_
