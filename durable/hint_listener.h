// durable/hint_listener.h
// -----------------------------------------------------------------------------
// Internal. HintListener: a thread that listens for schedule hints, so that
// a timer scheduled by another process and due before this process's next
// poll is claimed in time for its deadline.
//
// A process finds due timers by polling each shard every poll_interval; a
// timer that another process schedules due sooner than that would wait for
// the next poll. So the schedule script, when a new timer is due before
// Redis's now + the scheduling process's poll_interval, PUBLISHes a hint
// "<shard> <deadline us>" on the keyspace's channel (keys.h, HintChannel()).
// This listener holds its own connection, SUBSCRIBEd to that channel, and
// hands each hint to `on_hint`; the delivery then looks at the shard in time
// for the deadline (Delivery::Scheduled(), as for the timers it schedules
// itself).
//
// Hints only make delivery prompter; correctness never depends on them.
// Pub/Sub is fire-and-forget: a hint sent while no connection listens is
// lost. So after every (re)subscription the listener calls `on_subscribed`
// (the delivery looks at every shard at once), and polling stays the safety
// net. A connection that fails, or that Redis closes (CLIENT KILL, a
// restart), is opened again after a back-off (doubling from 25 ms to 1 s);
// one that goes silent is found by a PING every kPingNanos that gets no
// answer within the session's timeout.
//
// On a Redis Cluster a classic PUBLISH reaches the subscribers of every
// node (the cluster bus carries it), so one subscription to any node
// suffices: the listener takes the cluster's seed nodes in turn, moving to
// the next one when a connection fails.
//
// The callbacks run on the listener's thread, one at a time; they must not
// call Stop(). Start() and Stop() are for one owner thread (the delivery's
// Start() and Stop()).

#ifndef TICKWHEEL_DURABLE_HINT_LISTENER_H_
#define TICKWHEEL_DURABLE_HINT_LISTENER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "tickwheel/durable/redis_connection.h"
#include "tickwheel/durable/redis_session.h"

namespace tickwheel::durable::internal {

// A hint's payload, "<shard> <deadline us>".
struct Hint {
  int shard = 0;
  int64_t due_us = 0;
};
// The hint in `message`, or nullopt when it is malformed or names a shard
// outside [0, shards).
std::optional<Hint> ParseHint(std::string_view message, int shards);

class HintListener {
 public:
  // A subscribed connection that has said nothing for this long is sent a
  // PING; no answer within the session's timeout and it is opened again.
  static constexpr int64_t kPingNanos = 5'000'000'000;

  struct Callbacks {
    std::function<void(const Hint&)> on_hint;
    // After each subscription, the first one included: hints sent before it
    // were lost.
    std::function<void()> on_subscribed;
  };

  // `session` gives the endpoint (or the cluster's seeds), the credentials
  // and the timeout; it must outlive the listener.
  HintListener(const SessionOptions* session, std::string channel, int shards,
               Callbacks callbacks);
  ~HintListener();  // Stop()

  HintListener(const HintListener&) = delete;
  HintListener& operator=(const HintListener&) = delete;

  // Starts the thread. ResourceExhausted when it (or its wake-up pipe)
  // cannot be made; nothing runs then.
  absl::Status Start();
  // Wakes the thread, closes its connection and joins it: at once, unless
  // a connection attempt is under way (then within redis_timeout).
  // Idempotent.
  void Stop();

 private:
  void Loop();
  // One connection: connect, subscribe, then hints until the connection
  // fails (the status says why) or Stop() (OK).
  absl::Status ListenOnce(const RedisEndpoint& endpoint);
  // Handles one reply or message of the subscribed connection; `pong` is
  // set when it answers a PING.
  void Dispatch(const RedisReply& reply, bool* pong);
  // Waits up to `nanos` or until Stop(); false when stopping.
  bool Pause(int64_t nanos);
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }

  const SessionOptions* const session_;
  const std::string channel_;
  const int shards_;
  const Callbacks callbacks_;
  // Written by Stop() (release), read by the thread (acquire): after it
  // reads true, the thread touches nothing of the owner's.
  std::atomic<bool> stopping_{false};
  int wake_[2] = {-1, -1};  // a pipe: Stop() writes, the thread polls
  std::thread thread_;
};

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_HINT_LISTENER_H_
