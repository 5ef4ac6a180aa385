// examples/request_deadline.cc: a deadline for every request.
//
// A server answers requests on a few threads. Each request gets a deadline on
// the timer; then the first of two events answers it:
//   - the reply: the handler calls deadline.cancel(). true means the deadline
//     will never run, so the reply is sent. false means the deadline already
//     fired, or is firing right now on the timer's thread, so the client was
//     (or is being) told "timed out" and the late reply is dropped.
//   - the deadline: its task answers "timed out".
// Of the two, cancel() decides, and exactly one side answers, without a lock.
//
// A streaming request has a budget per chunk instead: each chunk moves the
// deadline with reset(), and the stream times out only when chunks stop.
//
//   bazel run //examples:request_deadline

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tickwheel/timer/timer.h"

namespace {

using Clock = std::chrono::steady_clock;
using tickwheel::Timeout;

constexpr auto kBudget = std::chrono::milliseconds(300);
constexpr int kThreads = 3, kRequests = 9;

// A one-shot event with a bounded wait, so that a broken example fails
// instead of hanging.
class Event {
 public:
  void Set() {
    std::lock_guard<std::mutex> lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10),
                        [this] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

struct Request {
  Timeout deadline;             // only the handler's thread touches the handle
  std::atomic<int> answers{0};  // answers sent to the client: must end at 1
  std::atomic<bool> timed_out{false};
  Event deadline_answered;  // lets a hanging backend give up
};

bool Hangs(int id) { return id % 4 == 3; }  // the backend misses the budget

// Handles one request on the calling thread; false if it was answered other
// than exactly once, or not as expected.
bool Serve(tickwheel::Timer& timer, int id, std::atomic<int>& dropped) {
  auto req = std::make_shared<Request>();
  // The task holds a shared_ptr: the request lives until both the handler
  // and the task are done with it, whichever finishes last. cancel() destroys
  // the task, and with it this reference, before it returns.
  req->deadline =
      timer
          .newTimeout(
              [req] {
                req->timed_out = true;
                req->answers.fetch_add(1);  // "504 timed out" to the client
                req->deadline_answered.Set();
              },
              kBudget)
          .value();

  // The backend call: quick, or stuck until the deadline has answered.
  if (Hangs(id)) {
    req->deadline_answered.Wait();
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (req->deadline.cancel()) {
    req->answers.fetch_add(1);  // "200 OK": the deadline will never run
  } else {
    // The deadline claimed the request first; it may still be running.
    dropped.fetch_add(1);
    req->deadline_answered.Wait();
  }
  fmt::print("  request {}: {}\n", id,
             req->timed_out ? "deadline fired first, late reply dropped"
                            : "replied in time, deadline cancelled");
  return req->answers == 1 && req->timed_out == Hangs(id);
}

// A stream that must deliver a chunk within kBudget of the previous one.
struct Stream {
  Event timed_out;
};

bool StreamDemo(tickwheel::Timer& timer) {
  auto stream = std::make_shared<Stream>();
  const Clock::time_point start = timer.now();
  auto ms = [start](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(t - start).count();
  };
  // A weak_ptr this time: a stream closed and freed before its deadline needs
  // no timing out, and its deadline must not keep it alive.
  Timeout idle = timer
                     .newTimeout(
                         [weak = std::weak_ptr<Stream>(stream)] {
                           if (auto s = weak.lock()) s->timed_out.Set();
                         },
                         kBudget)
                     .value();
  fmt::print("stream: deadline at {:.0f} ms\n", ms(idle.deadline()));
  Clock::time_point last_reset;
  for (int chunk = 1; chunk <= 3; ++chunk) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    last_reset = Clock::now();
    if (!idle.reset(kBudget)) return false;  // chunks are well within budget
    fmt::print("  chunk {} at {:.0f} ms: deadline moved to {:.0f} ms\n", chunk,
               ms(last_reset), ms(idle.deadline()));
  }
  if (!stream->timed_out.Wait()) return false;
  const Clock::time_point fired = Clock::now();
  fmt::print("  no more chunks: timed out at {:.0f} ms\n", ms(fired));
  // A chunk that arrives now is too late: reset() refuses a fired timeout.
  const bool late_reset = idle.reset(kBudget);
  fmt::print("  late chunk: reset() -> {}\n", late_reset);
  return fired >= last_reset + kBudget && !late_reset && idle.isExpired();
}

}  // namespace

int main() {
  tickwheel::TimerOptions options;
  options.tick_duration = absl::Milliseconds(10);
  auto timer = tickwheel::Timer::Create(options).value();

  fmt::print("{} requests on {} threads, budget {} ms; every 4th hangs\n",
             kRequests, kThreads, kBudget.count());
  std::atomic<int> dropped{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int id = t; id < kRequests; id += kThreads) {
        if (!Serve(*timer, id, dropped)) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads) th.join();

  const bool stream_ok = StreamDemo(*timer);
  const tickwheel::TimerMetrics m = timer->metrics();
  fmt::print(
      "late replies dropped: {}; timer: expired={} cancelled={} pending={}\n",
      dropped.load(), m.expired, m.cancelled, m.pending);
  int hanging = 0;
  for (int id = 0; id < kRequests; ++id) hanging += Hangs(id);
  const bool ok =
      stream_ok && wrong == 0 && dropped == hanging && m.pending == 0;
  fmt::print("{}\n", ok ? "OK" : "WRONG");
  return ok ? 0 : 1;
}
