#include "tickwheel/durable/delivery.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <system_error>
#include <typeinfo>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/timer/clock.h"
#include "tickwheel/timer/log.h"

namespace tickwheel::durable::internal {
namespace {

// The delivery whose handler the current thread runs, if any.
thread_local const Delivery* t_in_handler = nullptr;

int64_t Now() { return RealClock::MonotonicNanos(); }

std::chrono::steady_clock::time_point At(int64_t nanos) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(nanos));
}

void NameThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

// Failed round trips back off from this, doubling up to the cap, so that a
// Redis that is down costs a connection attempt about once a second.
constexpr int64_t kFirstBackoffNanos = 25'000'000;
constexpr int64_t kMaxBackoffNanos = 1'000'000'000;

}  // namespace

Delivery::Delivery(DeliveryOptions options, Counters* counters, Handler handler)
    : options_(std::move(options)),
      counters_(counters),
      handler_(std::move(handler)),
      shards_(static_cast<int>(options_.keys->size())),
      start_window_nanos_(
          std::min(kStartWindowNanos, options_.lease_us * 1000 / 2)) {
  MutexLock lock(&mu_);
  next_check_.assign(static_cast<size_t>(shards_), 0);
  scheduled_hint_.assign(static_cast<size_t>(shards_), INT64_MAX);
  backlog_.assign(static_cast<size_t>(shards_), false);
}

Delivery::~Delivery() { Stop(); }

absl::Status Delivery::Start() {
  MutexLock stop_lock(&stop_mu_);
  // The hold timer: a 1 ms tick and no slack, so that a held timer goes to
  // Redis for its start within about a millisecond of its deadline.
  TimerOptions timer_options;
  timer_options.tick_duration = absl::Milliseconds(1);
  timer_options.ticks_per_wheel = 1024;
  timer_options.slack = absl::ZeroDuration();
  timer_options.thread_name = "tw-durable-hold";
  absl::StatusOr<std::unique_ptr<Timer>> timer =
      Timer::Create(std::move(timer_options));
  if (!timer.ok()) return timer.status();
  hold_timer_ = *std::move(timer);
  if (!options_.hint_channel.empty()) {
    hints_ = std::make_unique<HintListener>(
        options_.session, options_.hint_channel, shards_,
        HintListener::Callbacks{
            .on_hint = [this](const Hint& h) { Scheduled(h.shard, h.due_us); },
            .on_subscribed = [this] { Rescan(); }});
    if (absl::Status s = hints_->Start(); !s.ok()) {
      hints_.reset();
      hold_timer_.reset();
      return s;
    }
  }
  try {
    poller_ = std::thread([this] { PollerLoop(); });
    for (int i = 0; i < options_.handler_threads; ++i) {
      handlers_.emplace_back([this, i] { HandlerLoop(i); });
    }
  } catch (const std::system_error& e) {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    poll_cv_.notify_all();
    work_cv_.notify_all();
    for (std::thread& t : handlers_) t.join();
    if (poller_.joinable()) poller_.join();
    if (hints_ != nullptr) hints_->Stop();
    hold_timer_.reset();
    return absl::ResourceExhaustedError(
        fmt::format("cannot start the durable timer's threads: {}", e.what()));
  }
  started_ = true;
  return absl::OkStatus();
}

void Delivery::Stop() {
  MutexLock stop_lock(&stop_mu_);
  if (!started_ || joined_) return;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  poll_cv_.notify_all();
  work_cv_.notify_all();
  if (hints_ != nullptr) hints_->Stop();
  // No held timer becomes ready from here on; the poller releases them. A
  // hold task that is running finishes first (it takes mu_ and finds
  // stopping_).
  (void)hold_timer_->stop();
  for (std::thread& t : handlers_) t.join();
  poller_.join();
  joined_ = true;
}

bool Delivery::InHandler() const { return t_in_handler == this; }

void Delivery::Scheduled(int shard, int64_t due_us) {
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    const int64_t at =
        clock_.known() ? clock_.LocalWhenSurely(due_us - options_.lookahead_us)
                       : 0;
    int64_t& hint = scheduled_hint_[static_cast<size_t>(shard)];
    hint = std::min(hint, at);
    int64_t& next = next_check_[static_cast<size_t>(shard)];
    if (at >= next) return;
    next = at;
  }
  poll_cv_.notify_one();
}

void Delivery::Rescan() {
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    std::fill(next_check_.begin(), next_check_.end(), 0);
    std::fill(scheduled_hint_.begin(), scheduled_hint_.end(), 0);
  }
  poll_cv_.notify_one();
}

void Delivery::Cancelled(std::string_view id) {
  MutexLock lock(&mu_);
  std::vector<uint64_t> drop;
  for (const auto& [key, h] : held_) {
    if (h.id == id && !h.in_flight &&
        (h.stage == Stage::kWaiting || h.stage == Stage::kReady ||
         h.stage == Stage::kQueued || h.stage == Stage::kExpired)) {
      drop.push_back(key);
    }
  }
  for (const uint64_t key : drop) {
    std::erase(ready_, key);
    std::erase(queued_, key);
    std::erase(expired_, key);
    EraseLocked(key);
  }
}

void Delivery::EraseLocked(uint64_t key) { held_.erase(key); }

void Delivery::QueueLocked(uint64_t key, Held& h, int64_t sent) {
  h.stage = Stage::kQueued;
  h.start_by = sent + start_window_nanos_;
  queued_.push_back(key);
}

void Delivery::ExpireLocked(uint64_t key) {
  held_.at(key).stage = Stage::kExpired;
  expired_.push_back(key);
  counters_->Add(counters_->start_window_misses);
}

void Delivery::HoldLocked(uint64_t key, Held& h, int64_t due_us) {
  h.stage = Stage::kWaiting;
  h.hold_seq = next_hold_seq_++;
  const int64_t at = clock_.LocalWhenSurely(due_us);
  // A stopped timer refuses (Stop() is under way): the item stays kWaiting
  // and the poller releases it.
  (void)hold_timer_->newTimeoutAt(
      [this, key, seq = h.hold_seq] { OnHoldExpired(key, seq); },
      TimePoint(std::chrono::nanoseconds(at)));
}

void Delivery::OnHoldExpired(uint64_t key, uint64_t hold_seq) {
  {
    MutexLock lock(&mu_);
    auto it = held_.find(key);
    if (stopping_ || it == held_.end()) return;
    Held& h = it->second;
    if (h.stage != Stage::kWaiting || h.hold_seq != hold_seq || h.in_flight) {
      return;
    }
    h.stage = Stage::kReady;
    h.ready_since = Now();
    ready_.push_back(key);
  }
  poll_cv_.notify_one();
}

void Delivery::HandlerLoop(int index) {
  NameThread(fmt::format("tw-durable-{}", index));
  for (;;) {
    uint64_t key = 0;
    Delivered fired;
    int64_t lateness_us = 0;
    bool expired = false;
    {
      MutexLock lock(&mu_);
      for (;;) {
        work_cv_.wait(mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || !queued_.empty();
        });
        if (stopping_) break;  // the poller releases what is queued
        key = queued_.front();
        queued_.pop_front();
        // Past its start window (the handlers fell behind the budget, or
        // this process was paused): not run; the poller releases it.
        if (Now() <= held_.at(key).start_by) break;
        ExpireLocked(key);
        expired = true;
      }
      if (stopping_) {
        if (expired) poll_cv_.notify_one();
        return;
      }
      Held& h = held_.at(key);
      h.stage = Stage::kRunning;
      ++running_;
      fired.id = h.id;
      fired.payload = std::move(h.payload);
      fired.deadline_us = h.deadline_us;
      fired.attempt = h.attempt;
      lateness_us = clock_.EstimateMicros(Now()) - h.due_us;
    }
    if (expired) poll_cv_.notify_one();
    counters_->Add(counters_->delivered);
    if (fired.attempt > 1) counters_->Add(counters_->redelivered);
    counters_->RecordLateness(
        absl::Microseconds(std::max<int64_t>(0, lateness_us)));
    const absl::Status result = RunHandler(fired);
    if (!result.ok()) counters_->Add(counters_->handler_failures);
    {
      MutexLock lock(&mu_);
      Held& h = held_.at(key);
      h.stage = Stage::kDone;
      h.ok = result.ok();
      if (!h.ok) {
        h.error = result.ToString();
        if (h.error.size() > kMaxErrorBytes) h.error.resize(kMaxErrorBytes);
      }
      done_.push_back(key);
      --running_;
      ++completed_;
    }
    poll_cv_.notify_one();
  }
}

absl::Status Delivery::RunHandler(Delivered& delivered) {
  // The handler may move the strings out; keep what the log needs.
  const std::string id = delivered.id;
  const int attempt = delivered.attempt;
  t_in_handler = this;
  absl::Status result;
  try {
    result = handler_(delivered);
  } catch (const std::exception& e) {
    result = absl::InternalError(
        fmt::format("the handler threw {}: {}", typeid(e).name(), e.what()));
  } catch (...) {
    result = absl::InternalError("the handler threw a non-std::exception");
  }
  t_in_handler = nullptr;
  if (absl::IsInternal(result) &&
      std::string_view(result.message().data(), result.message().size())
          .starts_with("the handler threw")) {
    Log(LogSeverity::kError,
        fmt::format("durable timer \"{}\" (attempt {}): {}; it is delivered "
                    "again after the back-off",
                    id, attempt, std::string(result.message())));
  }
  return result;
}

void Delivery::PollerLoop() {
  NameThread("tw-durable-poll");
  RedisSession session(options_.session, &counters_->redis);
  std::vector<RedisReply> replies;
  Retry retry;
  // Whether the replicas fell short on the last round trip that asked,
  // and when to ask again.
  bool replicas_short = false;
  int64_t next_replica_probe = 0;
  for (;;) {
    Batch batch;
    if (!NextBatch(retry.at, &batch)) return;
    // Handlers' results (acknowledgements, failures, dead-letter moves)
    // wait for the replicas with min_replicas_acked: a lost one would
    // deliver the timer again after a failover. Claims, starts, renewals
    // and releases do not: losing one only delays or repeats a delivery.
    const bool results =
        options_.session->min_replicas_acked > 0 &&
        std::any_of(batch.ops.begin(), batch.ops.end(), [](const Op& op) {
          return !op.probe &&
                 (op.script == Script::kAck || op.script == Script::kFail);
        });
    const int64_t before = Now();
    // No caller waits for these, and the same round trip may start timers
    // that must begin within the start window: WAIT at most half of it.
    // While the replicas are short, ask only once per poll interval, so
    // that a master without its replica does not slow every delivery.
    const bool wait =
        results && (!replicas_short || before >= next_replica_probe);
    ReplicaAck ack;
    ack.timeout_ms =
        std::clamp<int64_t>(start_window_nanos_ / 2 / 1'000'000, 1,
                            options_.session->replica_ack_timeout_ms);
    const absl::Status status =
        session.Run(batch.commands, &replies, before + options_.timeout_nanos,
                    wait ? &ack : nullptr);
    const int64_t after = Now();
    if (status.ok() && wait) {
      NoteReplicas(ack, &replicas_short);
      next_replica_probe = after + options_.poll_nanos;
    } else if (status.ok() && results) {
      counters_->Add(counters_->replica_shortfalls);  // not confirmed
    }
    const Settled settled =
        Settle(batch, status, replies, before, after, session, &retry);
    work_cv_.notify_all();
    if (!settled.log.empty()) Log(settled.severity, settled.log);
    if (settled.give_up) {
      if (settled.abandoned > 0) {
        Log(LogSeverity::kWarning,
            fmt::format("durable timers: Stop() could not reach Redis to hand "
                        "back {} claimed timers; they are delivered again when "
                        "their leases end",
                        settled.abandoned));
      }
      return;
    }
  }
}

void Delivery::NoteReplicas(const ReplicaAck& ack, bool* replicas_short) {
  const int wanted = options_.session->min_replicas_acked;
  if (ack.short_of(wanted)) {
    counters_->Add(counters_->replica_shortfalls);
    if (!*replicas_short) {
      Log(LogSeverity::kWarning,
          fmt::format("durable timers: only {} of {} replicas of the Redis "
                      "master at {} confirmed the delivery results; they are "
                      "applied on the master, and a failover now may deliver "
                      "those timers again (asking again once per poll "
                      "interval)",
                      ack.acked, wanted, ack.node.ToString()));
    }
  } else if (*replicas_short) {
    Log(LogSeverity::kInfo,
        fmt::format("durable timers: {} replicas confirm the delivery results "
                    "again",
                    wanted));
  }
  *replicas_short = ack.short_of(wanted);
}

bool Delivery::NextBatch(int64_t retry_at, Batch* batch) {
  MutexLock lock(&mu_);
  for (;;) {
    const int64_t now = Now();
    if (stopping_ && held_.empty()) return false;
    int64_t wake = now + options_.poll_nanos;
    // Stopping with no handler running: the last round trip goes at once,
    // whatever the back-off, so that Stop() returns promptly.
    if (now >= retry_at || (stopping_ && running_ == 0)) {
      PlanLocked(now, batch, &wake);
      if (!batch->empty()) return true;
    } else {
      wake = retry_at;
    }
    poll_cv_.wait_until(mu_, At(std::max(wake, now + 100'000)));
  }
}

Delivery::Settled Delivery::Settle(Batch& batch, absl::Status status,
                                   std::vector<RedisReply>& replies,
                                   int64_t before, int64_t after,
                                   RedisSession& session, Retry* retry) {
  Settled settled;
  MutexLock lock(&mu_);
  if (status.ok()) {
    status = ApplyLocked(batch, replies, before, after, session)
                 ? absl::OkStatus()
                 : absl::UnavailableError("an error reply");
  } else {
    for (const Op& op : batch.ops) UndoLocked(op);
  }
  if (status.ok()) {
    if (retry->failures > 0) {
      settled.severity = LogSeverity::kInfo;
      settled.log = fmt::format(
          "durable timers: Redis at {} answers again after {} failed round "
          "trips; delivery goes on",
          session.endpoint().ToString(), retry->failures);
    }
    *retry = Retry{};
    return settled;
  }
  if (retry->failures++ == 0) {
    settled.severity = LogSeverity::kWarning;
    settled.log =
        fmt::format("durable timers: {}; delivery waits for Redis and retries",
                    std::string(status.message()));
  }
  retry->backoff =
      std::clamp(retry->backoff * 2, kFirstBackoffNanos, kMaxBackoffNanos);
  retry->at = after + retry->backoff;
  if (stopping_ && running_ == 0) {
    settled.abandoned = AbandonLocked();
    settled.give_up = true;
  }
  return settled;
}

size_t Delivery::AbandonLocked() {
  const size_t n = held_.size();
  held_.clear();
  ready_.clear();
  queued_.clear();
  expired_.clear();
  done_.clear();
  starting_ = 0;
  return n;
}

}  // namespace tickwheel::durable::internal
