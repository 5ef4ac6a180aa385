// durable/testing/test_util.h
// -----------------------------------------------------------------------------
// Test-only. Small helpers shared by the durable timer's tests: options with
// short leases and poll intervals (so the suite is quick), waiting for a
// condition with a generous bound, a temporary file path, and a
// handler-side record of deliveries.

#ifndef TICKWHEEL_DURABLE_TESTING_TEST_UTIL_H_
#define TICKWHEEL_DURABLE_TESTING_TEST_UTIL_H_

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tickwheel/durable/durable_timer.h"
#include "tickwheel/durable/testing/redis_server.h"

namespace tickwheel::durable::testing {

// Generous: the machines are shared, and the suite also runs under TSan.
inline constexpr absl::Duration kPatience = absl::Seconds(30);

// Options for a test: `redis`, a keyspace of its own, 4 shards, a 2 s
// lease, a 50 ms poll interval, a 100 ms first back-off.
inline DurableTimerOptions TestOptions(const RedisServer& redis,
                                       std::string keyspace = "tw-test") {
  DurableTimerOptions o;
  o.redis = redis.uri();
  o.keyspace = std::move(keyspace);
  o.shards = 4;
  o.lease = absl::Seconds(2);
  o.poll_interval = absl::Milliseconds(50);
  o.retry_backoff = absl::Milliseconds(100);
  o.redis_timeout = absl::Seconds(2);
  o.handler_threads = 4;
  return o;
}

// Polls `pred` every 5 ms until it holds or `timeout` passes.
template <typename Pred>
bool WaitUntil(Pred pred, absl::Duration timeout = kPatience) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!pred()) {
    if (absl::Now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// The last `bytes` of a file (a worker's output, for a failure message).
inline std::string FileTail(const std::string& path, size_t bytes = 3000) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

// A fresh path in the test's temporary folder.
inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  static int counter = 0;
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name + "." +
         std::to_string(::getpid()) + "." + std::to_string(++counter);
}

// A one-shot signal between threads on std::mutex and
// std::condition_variable, which ThreadSanitizer sees (Debian's
// absl::Notification sits on an uninstrumented absl::Mutex). Thread-safe.
class Latch {
 public:
  void Notify() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
  }
  bool WaitFor(absl::Duration timeout = kPatience) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                        [this] { return done_; });
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
  }
  bool HasBeenNotified() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// What a handler saw, for the in-process tests. Thread-safe.
class Deliveries {
 public:
  void Add(const FiredTimer& t) {
    std::lock_guard<std::mutex> lock(mu_);
    all_.push_back(t);
    ++count_[t.id];
  }
  int Count(const std::string& id) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = count_.find(id);
    return it == count_.end() ? 0 : it->second;
  }
  size_t Total() const {
    std::lock_guard<std::mutex> lock(mu_);
    return all_.size();
  }
  size_t Distinct() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_.size();
  }
  std::vector<FiredTimer> All() const {
    std::lock_guard<std::mutex> lock(mu_);
    return all_;
  }
  // A handler for DurableTimer::Start() that records each delivery here and
  // acknowledges it; this Deliveries must outlive the timer's handler runs.
  std::function<absl::Status(const FiredTimer&)> Recorder() {
    return [this](const FiredTimer& t) {
      Add(t);
      return absl::OkStatus();
    };
  }

 private:
  mutable std::mutex mu_;
  std::vector<FiredTimer> all_;
  std::map<std::string, int> count_;
};

}  // namespace tickwheel::durable::testing

#endif  // TICKWHEEL_DURABLE_TESTING_TEST_UTIL_H_
