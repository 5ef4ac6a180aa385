// durable/durable_timer.h
// -----------------------------------------------------------------------------
// tickwheel::durable: timers that survive crashes and restarts and that a
// fleet of processes shares, stored in Redis. #include
// "tickwheel/durable/durable_timer.h"; Bazel //durable, CMake
// tickwheel::durable.
//
// What it is for: "charge this card in 3 days", "expire this reservation in
// 15 minutes even if we redeploy", "remind once, from one of N replicas". An
// in-process Timer loses its timeouts when its process dies and cannot be
// shared. A closure cannot be persisted, so a durable timer is data -- an id,
// a deadline and a payload -- and each process registers one handler that
// receives the timers as they come due.
//
// Example:
//
//   namespace td = tickwheel::durable;
//   auto timers = td::DurableTimer::Connect({.redis = "tcp://10.0.0.5:6379",
//                                            .keyspace = "billing"}).value();
//   timers->ScheduleAfter("charge:order-1234", absl::Hours(72), "1999 EUR");
//   timers->Start([](const td::FiredTimer& t) -> absl::Status {
//     return Charge(t.id, t.payload);   // not OK: delivered again later
//   });
//   ...
//   timers->Stop();   // waits for running handlers, hands the rest back
//
// Guarantees (docs/DURABLE.md says how each is kept and which test proves
// it):
//   At least once. Every timer whose Schedule() returned OK is delivered
//     until a handler returns OK for it or it is cancelled: across kill -9 of
//     any process, and across a Redis restart when Redis persists every write
//     (appendonly yes, appendfsync always), and across a failover to a
//     replica when DurableTimerOptions::min_replicas_acked asks the
//     replicas to confirm each write (as far as Redis's WAIT goes). A
//     handler may therefore see a timer more than once
//     (FiredTimer::attempt counts); make it idempotent.
//   Never early, on Redis's clock (TIME): a handler starts only once Redis's
//     clock has reached the deadline, so processes whose clocks differ agree.
//   One owner at a time while a lease holds. A delivery holds a lease
//     (DurableTimerOptions::lease) that its process renews while the handler
//     runs; no other process delivers the timer until the lease has ended.
//     A process that stops renewing (it died, it hangs, it lost Redis) loses
//     the timer when the lease ends, and its late acknowledgement is ignored;
//     a process resumed after a pause begins no handler for what it lost.
//     A handler that does not return holds its own timer and no other: a
//     process starts timers only for handler threads that begin them at
//     once, and renews only running handlers' leases.
//   Dead letters. With DurableTimerOptions::max_attempts, a timer whose
//     attempts all failed is kept in a dead-letter set instead of being
//     retried: listed, retried and purged through this class, removed by
//     retention if asked. Moving it there is atomic with the failure that
//     used up its attempts.
//   Shared load. Any number of processes may Start(); each claims due timers
//     in batches sized to what its handler threads finish.
//   Redis down: calls return Unavailable within about redis_timeout, never
//     hang or crash; delivery resumes by itself when Redis is back.
//   Prompt: with idle processes a due timer starts within poll_interval plus
//     a few milliseconds. A process claims timers up to poll_interval before
//     their deadline (as many as twice what its handlers are finishing) and
//     holds them in a local tickwheel::Timer, so those start within
//     milliseconds of it; so do timers it schedules itself, and, with
//     schedule_hints, timers due sooner than poll_interval that another
//     process scheduled.
//
// Threading: DurableTimer is thread-safe; any thread may call any method.
// The handler runs on this process's handler threads
// (DurableTimerOptions::handler_threads), several timers at once; it may call
// Schedule(), Cancel(), Pending(), Get() and the dead-letter calls on its own
// DurableTimer, but not Stop() and not the destructor.
//
// Errors are absl::Status values whose messages say what to do; no exception
// crosses the API. A handler that throws counts as a failure: the timer is
// delivered again after a back-off, and the delivery threads go on.
//
// Cost: every call is one round trip to Redis (Schedule(), ScheduleAfter(),
// ScheduleMany(), Cancel(), Pending(), Get(), ListDeadLetters(), and the
// dead-letter calls per 1000 dead letters), plus a reconnect when the
// connection had failed. A delivery costs the fleet about one claim, one start
// (none when it is claimed already due) and one acknowledgement, each batched
// across many timers.

#ifndef TICKWHEEL_DURABLE_DURABLE_TIMER_H_
#define TICKWHEEL_DURABLE_DURABLE_TIMER_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tickwheel/timer/metrics.h"

namespace tickwheel::durable {

struct DurableTimerOptions {
  // Where Redis listens: "tcp://host:port" or "unix:///path/redis.sock".
  // One Redis (or its primary). Ignored when cluster_nodes is set.
  std::string redis = "tcp://127.0.0.1:6379";
  // A Redis Cluster instead of one Redis: some of its nodes, each
  // "host:port" (a master or a replica; one that answers is enough). Each
  // connection reads the slot map (CLUSTER SLOTS) from them and sends each
  // shard's scripts to the master of the shard's hash-tag slot; a MOVED
  // (the slot has a new owner: the map is read again), an ASK (the slot is
  // migrating) or a TRYAGAIN is followed up to max_cluster_redirects times
  // per call, after which the call is Unavailable. A failover may lose
  // what a master acknowledged last unless min_replicas_acked asks the
  // replicas to confirm it: docs/DURABLE.md, "Failover".
  // Empty (the default): one Redis, at `redis`. InvalidArgument when an
  // entry is not host:port.
  std::vector<std::string> cluster_nodes;
  // Redirects one command may follow within one call, in [1, 100].
  int max_cluster_redirects = 5;
  // Replicas that must confirm a write before the call that made it
  // returns OK, in [0, 100]. 0 (the default): none; a write is confirmed
  // when the master has it (on its disk, with appendfsync always), and a
  // failover that promotes a replica which had not received it yet loses
  // it. n > 0: every call that changes timers (Schedule*(), Cancel(),
  // RetryDeadLetter(), RetryAllDeadLetters(), PurgeDeadLetter(),
  // PurgeDeadLetters()) sends WAIT n after its writes on the same
  // connection, to every master it wrote to, and returns Unavailable when
  // fewer than n replicas acknowledged within replica_ack_timeout: the
  // write is on the master and takes effect there, but may not survive a
  // failover; calling again with the same id is safe and returns OK once
  // the replicas have it. Delivery's acknowledgements and failures are
  // followed by WAIT too, for at most 25 ms, and while the replicas fall
  // short only once per poll_interval (DurableMetrics::replica_shortfalls
  // counts the round trips not confirmed; a lost acknowledgement means a
  // delivery again, never a lost timer). Connect() checks that
  // every master holding a shard has n replicas acknowledging
  // (FailedPrecondition otherwise: a Redis without replicas, or with its
  // replicas down). WAIT is not strong consistency: a replica that acknowledged
  // a write may still lose it (it crashes too, or another replica is promoted);
  // docs/DURABLE.md says what it covers. Cost: each such call waits for the
  // replicas' acknowledgement, about one more round trip between master and
  // replica.
  int min_replicas_acked = 0;
  // How long one call waits for the replicas (WAIT's timeout), rounded up
  // to whole milliseconds; the call then returns within about
  // redis_timeout + replica_ack_timeout. Must be > 0 and finite (WAIT 0
  // would wait for ever). Used only with min_replicas_acked > 0.
  absl::Duration replica_ack_timeout = absl::Seconds(1);
  // Credentials, sent with AUTH on every connection. With a username (an
  // ACL user, Redis 6 and later): AUTH username password. Without one:
  // AUTH password when the password is not empty (the default user, as
  // with requirepass), else no AUTH. A refused pair is PermissionDenied
  // from Connect(); the password never appears in a status or a log.
  std::string username;
  std::string password;
  // Every key starts with "{<keyspace>:<shard>}". 1-128 bytes, no braces.
  // Timers of different keyspaces never meet.
  std::string keyspace = "tickwheel";
  // Shards of the keyspace, in [1, 1024]. Fixed per keyspace: the first
  // Connect() records it; another number later is FailedPrecondition. More
  // shards spread a Redis Cluster wider; on one Redis they cost an idle
  // process one small script per shard per poll_interval.
  int shards = 16;
  // A claimed timer is this process's for this long; renewed while its
  // handler runs. When a process dies, its timers are delivered again once
  // their leases end. At least 1 ms, and finite.
  absl::Duration lease = absl::Seconds(30);
  // How often an idle process looks for due timers: the bound on pickup
  // delay when idle, and how far ahead of a deadline it claims (at most
  // half the lease). Must be > 0. Each look costs one small script per
  // shard.
  absl::Duration poll_interval = absl::Milliseconds(200);
  // Schedule hints, so that a timer due sooner than poll_interval is
  // delivered within about a round trip of its deadline even when another
  // process scheduled it. On: Schedule*() of a timer due before Redis's now
  // + poll_interval also PUBLISHes a small hint (shard, deadline) on the
  // channel "{<keyspace>}:hints" (one PUBLISH per script call, only then),
  // and Start() opens one more connection, SUBSCRIBEd to it, whose hints
  // make the process look at that shard in time. Polling stays the safety
  // net: a hint lost (no listener then, a Redis failover, an ACL user
  // without the channel) only means the timer is found at the next poll.
  // A hint reaches every Start()ed process, and each looks at the shard:
  // about one small script per process per hinted shard. Off: neither.
  bool schedule_hints = true;
  // Timers claimed and not yet acknowledged, per process, at most. >= 1.
  int max_in_flight = 1024;
  // Bound on connecting and on each call's round trips. Must be > 0.
  absl::Duration redis_timeout = absl::Seconds(1);
  // This process in leases (visible in the :state records); empty means
  // "<host>:<pid>:<random>".
  std::string owner;

  // tickwheel extensions, beyond the contract.
  // Threads that run the handler, several timers at once; 0 means 8.
  int handler_threads = 0;
  // After a handler fails (not OK, or a throw) for attempt n, the timer is
  // due again min(retry_backoff * 2^(n-1), max_retry_backoff) later, on
  // Redis's clock. Both >= 0.
  absl::Duration retry_backoff = absl::Seconds(1);
  absl::Duration max_retry_backoff = absl::Minutes(5);

  // Attempts a timer gets before it is dead-lettered; 0: no limit (it is
  // delivered until a handler returns OK, the default). An attempt is a
  // delivery Redis started that ended without an acknowledgement: the
  // handler returned an error or threw, or the lease ended first (the
  // process died, hung or lost Redis). The attempt that reaches the limit
  // moves the timer, atomically in Redis, to its shard's dead-letter set
  // (ListDeadLetters()) instead of back to the schedule. Recorded with each
  // timer when it is scheduled (TimerOptions::max_attempts overrides it per
  // timer), so the scheduling process decides, not the failing one. In
  // [0, 1000000].
  int max_attempts = 0;
  // How long a dead letter is kept: when a process dead-letters a timer, it
  // also deletes up to 16 of the shard's dead letters older than this.
  // InfiniteDuration (the default): kept until retried, purged or
  // cancelled. Must be > 0.
  absl::Duration dead_letter_retention = absl::InfiniteDuration();
};

// Options of one timer, for the Schedule*() overloads that take them.
struct TimerOptions {
  // Overrides DurableTimerOptions::max_attempts for this timer (0: no
  // limit). Unset: the scheduling process's DurableTimerOptions.
  std::optional<int> max_attempts;
};

// What a handler receives.
struct FiredTimer {
  std::string id;
  std::string payload;
  absl::Time deadline;  // as scheduled (ScheduleAfter: Redis's now + delay)
  int attempt;          // 1 for the first delivery, then + 1 for each other
};

struct ScheduleEntry {
  std::string id;
  absl::Time deadline;
  std::string payload;
  TimerOptions options;
};

// Where a timer is (Get()).
enum class TimerState {
  // Waiting for its deadline, for the end of a failure's back-off, or for a
  // process to take it after a lease ended: TimerInfo::next_delivery.
  kScheduled,
  // Claimed by a process (TimerInfo::owner) whose lease holds: its handler
  // runs, or the process holds it to start at its deadline (claimed ahead)
  // or as soon as a handler thread is free. "Running" from the fleet's view.
  kLeased,
  // Out of attempts (DurableTimerOptions::max_attempts): kept, not
  // delivered, until RetryDeadLetter(), PurgeDeadLetter() or Cancel().
  kDeadLettered,
};

// One timer as Redis holds it (Get()). Times on Redis's clock.
struct TimerInfo {
  std::string id;
  TimerState state = TimerState::kScheduled;
  std::string payload;
  absl::Time deadline;  // as scheduled
  // Deliveries started so far (the FiredTimer::attempt of the last one);
  // 0 before the first.
  int attempts = 0;
  int max_attempts = 0;    // recorded with the timer; 0: no limit
  std::string last_error;  // the last failure recorded; empty: none
  absl::Time next_delivery = absl::InfinitePast();     // kScheduled
  absl::Time lease_end = absl::InfinitePast();         // kLeased
  std::string owner;                                   // kLeased
  absl::Time dead_lettered_at = absl::InfinitePast();  // kDeadLettered
};

// A timer in the dead-letter set (ListDeadLetters()).
struct DeadLetter {
  std::string id;
  std::string payload;
  absl::Time deadline;  // as scheduled
  int attempts = 0;     // deliveries started, the last of them failed
  // The last failure: the handler's status ("INTERNAL: ..."), or that the
  // lease ended without an acknowledgement (which process held it). At most
  // 1 KiB.
  std::string last_error;
  absl::Time dead_lettered_at;  // on Redis's clock
};

struct DeadLetterPage {
  // Oldest first: by dead_lettered_at, then by id (bytes).
  std::vector<DeadLetter> dead_letters;
  // Pass it to ListDeadLetters() for the next page; empty: there is none. A
  // full page may be followed by an empty one.
  std::string next_page_token;
};

// This process's counters since Connect(). A snapshot of values each read
// on its own (relaxed), so they may be a few events apart.
struct DurableMetrics {
  int64_t scheduled = 0;  // timers Schedule*() accepted (ScheduleMany: each)
  int64_t delivered = 0;  // handler calls started
  // Acknowledgements Redis applied: handler returned OK and this process
  // still held the timer (an acknowledgement that comes after the lease was
  // lost, or after the timer was cancelled or replaced, is ignored).
  int64_t acknowledged = 0;
  int64_t redelivered = 0;       // handler calls with attempt > 1
  int64_t handler_failures = 0;  // not OK, or threw
  // Timers this process moved to the dead-letter set: out of attempts after
  // its handler failed, or found with an ended lease by its claim.
  int64_t dead_lettered = 0;
  // Deliveries Redis started for this process that no handler thread began
  // within the start window (the handlers fell behind, or the process was
  // paused): released unrun, their attempt taken back, due at once for any
  // process. A few under load are expected; a steady stream means the
  // handler threads are starved of CPU.
  int64_t start_window_misses = 0;
  int64_t redis_errors = 0;  // failed round trips and error replies
  // Writes Redis refused because it is full (maxmemory reached, with
  // maxmemory-policy noeviction): OOM replies to Schedule*() and Connect().
  int64_t redis_oom = 0;
  // Whether Redis is full, as this process last found: set by a refused
  // write, cleared by the next one accepted. While it is set, a Start()ed
  // process tries a write that grows nothing once per poll_interval, so
  // that it clears by itself when Redis has room again.
  bool redis_full = false;
  int64_t reconnects = 0;  // connections made again after a failure
  // Round trips of delivery (acknowledgements, failures, dead-letter moves)
  // whose writes fewer than min_replicas_acked replicas confirmed, or that
  // did not ask them, the replicas being short. The writes are on the
  // master; a failover before the replicas catch up may deliver those
  // timers again.
  int64_t replica_shortfalls = 0;
  // Delivery start - the time the delivery was due (the deadline; for a
  // retry, the end of its back-off; for a redelivery, the end of the lost
  // lease), on Redis's clock as this process estimates it.
  LatenessHistogram lateness;

  std::string ToString() const;
};

class DurableTimer {
 public:
  // Checks `options`, connects to Redis, loads the scripts and records or
  // checks the keyspace's shard count. Delivery starts only with Start().
  // InvalidArgument: bad options (shards < 1 or > 1024, lease, poll_interval
  //   or redis_timeout <= 0 or infinite, max_in_flight < 1, a keyspace with
  //   braces, a bad URI, handler_threads < 0, negative back-off,
  //   max_attempts outside [0, 1000000], dead_letter_retention <= 0,
  //   min_replicas_acked outside [0, 100], replica_ack_timeout <= 0 or
  //   infinite).
  // Unavailable: Redis not reachable within redis_timeout.
  // FailedPrecondition: the keyspace was created with another shard count;
  //   or min_replicas_acked > 0 and a master holding a shard had fewer
  //   replicas acknowledge a write within replica_ack_timeout (a Redis
  //   without replicas, or its replicas down): add replicas, or set
  //   min_replicas_acked = 0.
  // PermissionDenied: Redis refused the username and password (WRONGPASS),
  //   or needs them (NOAUTH), or the ACL user may not run the commands and
  //   scripts this library uses (NOPERM).
  // ResourceExhausted: Redis is full (maxmemory reached, noeviction) and
  //   the keyspace is new, so its shard count cannot be recorded. A
  //   keyspace that exists connects on a full Redis (Connect() only reads).
  static absl::StatusOr<std::unique_ptr<DurableTimer>> Connect(
      DurableTimerOptions options);

  // Stop(), then closes the connections. Not from a handler.
  ~DurableTimer();

  DurableTimer(const DurableTimer&) = delete;
  DurableTimer& operator=(const DurableTimer&) = delete;

  // Schedules timer `id` at `deadline` (on Redis's clock; a deadline in the
  // past is due at once; beyond the year 2255 it is clamped there) with
  // `payload`. Persisted before OK returns. The same id again replaces
  // deadline and payload and starts its attempts over; a delivery of the
  // old one that is running (see Cancel()) finishes, and its
  // acknowledgement is ignored; no other copy of the old one begins once
  // this returned OK.
  // InvalidArgument: empty id, id over 512 bytes, payload over 512 KiB.
  // ResourceExhausted: Redis is full (maxmemory reached, with
  //   maxmemory-policy noeviction): nothing was scheduled or replaced.
  //   Timers already scheduled are still delivered, acknowledged and
  //   cancelled on a full Redis, which frees memory; call again later, or
  //   give Redis more memory. DurableMetrics::redis_full says whether it
  //   is full now.
  // Unavailable: Redis unreachable or timed out: it may or may not be
  //   scheduled; call again (it is idempotent). With min_replicas_acked,
  //   also when fewer replicas confirmed it within replica_ack_timeout: it
  //   is scheduled on the master but may not survive a failover; call
  //   again (the message says which case it is).
  // Cost: one round trip (with min_replicas_acked, plus the replicas'
  // acknowledgement).
  absl::Status Schedule(std::string_view id, absl::Time deadline,
                        std::string_view payload = {});
  // Schedule() at Redis's clock now + `delay` (negative counts as zero),
  // so the caller's clock does not matter.
  absl::Status ScheduleAfter(std::string_view id, absl::Duration delay,
                             std::string_view payload = {});
  // The same with options of this timer (max_attempts outside [0, 1000000]
  // is InvalidArgument). Replacing a timer replaces its options too.
  absl::Status Schedule(std::string_view id, absl::Time deadline,
                        std::string_view payload, const TimerOptions& options);
  absl::Status ScheduleAfter(std::string_view id, absl::Duration delay,
                             std::string_view payload,
                             const TimerOptions& options);
  // Schedule() for every entry, in one round trip, all or none: entries are
  // checked first (InvalidArgument names the first bad one, and nothing is
  // scheduled), then one MULTI/EXEC transaction applies them together. A
  // later entry with the same id wins. Unavailable: all or none of them may
  // be scheduled; call again. ResourceExhausted: Redis is full, as for
  // Schedule(); none was scheduled. Keep batches to thousands of entries: Redis
  // serves no one else while it applies one. On a Redis Cluster
  // (cluster_nodes) a transaction may not span slots: each shard's entries
  // are all or none, the shards one after another, so an error may leave
  // some shards scheduled (the status says so; calling again is safe).
  absl::Status ScheduleMany(std::span<const ScheduleEntry> entries);

  // Cancels timer `id`. True iff it was scheduled and not yet acknowledged
  // (a dead letter too: it is deleted);
  // then it is never delivered again (a delivery already running finishes,
  // and its acknowledgement is ignored). False: unknown id (never scheduled,
  // acknowledged or cancelled already).
  // A delivery is running from the moment Redis starts it, and a process
  // has Redis start one only for a handler thread that begins it at once:
  // within 50 ms of asking, or never (it is then handed back unrun; see
  // DurableMetrics::start_window_misses). So after Cancel() returned true a
  // handler begins for `id` only if Redis had started that delivery before
  // the cancel, and then within that bound of its start; a copy that a
  // process holds but has not started (claimed ahead, or waiting for a busy
  // handler) never runs. InvalidArgument: a bad id.
  // Unavailable: it may or may not be cancelled; call again (false then
  // means it was). With min_replicas_acked, also when fewer replicas
  // confirmed the cancel: it is cancelled on the master, may not survive a
  // failover; call again (false then means it was, and OK means the
  // replicas have it). Cost: one round trip.
  absl::StatusOr<bool> Cancel(std::string_view id);

  // Delivers due timers of the keyspace to `handler` on this process's own
  // threads; any number of processes may. Handler OK: acknowledged, deleted.
  // Not OK, or a throw: delivered again after the back-off, attempt + 1;
  // dead-lettered instead once the attempt reached the timer's max_attempts.
  // Timers claimed by a process that dies are delivered again when their
  // lease ends. Returns at once; Redis being down is no error here (delivery
  // waits for it).
  // InvalidArgument: an empty handler.
  // FailedPrecondition: already started, or stopped.
  // ResourceExhausted: the local Timer or a thread could not be created.
  absl::Status Start(std::function<absl::Status(const FiredTimer&)> handler);

  // Stops claiming, waits for running handlers and sends their results,
  // then releases claimed-but-unstarted timers (others take them at once,
  // not after the lease). With Redis down it gives up after about
  // redis_timeout once the handlers are done; what it could not release is
  // delivered again when its leases end. Idempotent; OK before Start() too.
  // FailedPrecondition: called from a handler (it would wait for itself).
  absl::Status Stop();

  // Timers scheduled and neither acknowledged nor cancelled nor
  // dead-lettered, keyspace-wide (due, waiting, and being delivered): per
  // shard, its timers less its dead letters, two reads in a row (a dead
  // letter purged between them counts once). Cost: one round trip, two
  // commands per shard.
  absl::StatusOr<int64_t> Pending();

  // Timer `id` as Redis holds it now: state, deadline, payload, attempts
  // and last error, read atomically. NotFound: not scheduled (never, or
  // acknowledged, cancelled or purged). InvalidArgument: a bad id.
  // Unavailable: Redis unreachable; call again. Cost: one round trip, one
  // read-only script.
  absl::StatusOr<TimerInfo> Get(std::string_view id);

  // Dead letters (DurableTimerOptions::max_attempts), keyspace-wide, oldest
  // first, `page_size` (1 to 1000) at most per page; pass the last page's
  // next_page_token for the next. A page is consistent per shard; timers
  // dead-lettered, retried or purged between pages may be missed or
  // listed, each at most once, in order. InvalidArgument: a bad page size or
  // token. Cost: one round trip, one read-only script per shard, each
  // reading up to page_size entries.
  absl::StatusOr<DeadLetterPage> ListDeadLetters(
      int page_size = 100, std::string_view page_token = {});

  // Schedules dead letter `id` again: due now (Redis's clock) or at `at`,
  // with its payload, deadline and max_attempts, attempts from 0 and its
  // last error cleared; delivered like a newly scheduled timer. True: it
  // was a dead letter; false: it is not (anymore), so calling again is
  // harmless. Atomic. Unavailable: call again. Cost: one round trip.
  absl::StatusOr<bool> RetryDeadLetter(std::string_view id);
  absl::StatusOr<bool> RetryDeadLetter(std::string_view id, absl::Time at);
  // RetryDeadLetter() for every dead letter of the keyspace dead-lettered
  // before the call (those dead-lettered meanwhile are left for the next
  // call); returns how many. Each shard's batch of up to 1000 is atomic;
  // Unavailable: some may be retried, call again. Cost: one round trip per
  // 1000 dead letters of the fullest shard, one script per shard.
  absl::StatusOr<int64_t> RetryAllDeadLetters();
  absl::StatusOr<int64_t> RetryAllDeadLetters(absl::Time at);

  // Deletes dead letter `id` (record, payload, error). True: it was one;
  // false: it is not (a timer that is scheduled or running is left alone).
  // Cost: one round trip.
  absl::StatusOr<bool> PurgeDeadLetter(std::string_view id);
  // Deletes the dead letters dead-lettered before `before` (all of them, by
  // default); returns how many. Batches and errors as RetryAllDeadLetters().
  absl::StatusOr<int64_t> PurgeDeadLetters(
      absl::Time before = absl::InfiniteFuture());

  // This process's counters. Cost: copies the histogram (4 KiB).
  DurableMetrics metrics() const;

  // The owner string this process puts in its leases.
  const std::string& owner() const;

 private:
  struct Impl;
  explicit DurableTimer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tickwheel::durable

#endif  // TICKWHEEL_DURABLE_DURABLE_TIMER_H_
