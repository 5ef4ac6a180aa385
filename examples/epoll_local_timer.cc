// examples/epoll_local_timer.cc: an epoll loop that drives a LocalTimer
// (Linux).
//
// A server's event loop owns its timeouts: request deadlines and a
// heartbeat run on the loop's own thread, between I/O events, so they
// touch the loop's state without locks. The loop waits in epoll_wait() for
// at most timer->pollTimeoutMs(), then calls timer->advance(). Other
// threads reach the loop through an eventfd: a backend thread hands replies
// over in a queue and writes the eventfd to wake the loop, which then
// cancels the request's deadline on its own thread. A thread may also call
// Timeout::cancel() directly, the one LocalTimer call that any thread may
// make.
//
// Three requests: the backend answers request 1 in time (its deadline is
// cancelled), never answers request 2 (its deadline fires), and a client
// thread abandons request 3 (it cancels the deadline from its own thread).
// A heartbeat runs every kBeat and cancels itself after kBeats runs. The
// program checks what happened and exits non-zero if anything is wrong.
//
//   bazel run //examples:epoll_local_timer

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "absl/time/time.h"
#include "tickwheel/timer/local_timer.h"

namespace {

using tickwheel::LocalTimer;
using tickwheel::Timeout;

// Request id -> its deadline. Requests 1 and 3 end long before theirs
// (a reply, a cancel), however loaded the machine; request 2's fires.
constexpr absl::Duration kDeadlines[4] = {
    absl::ZeroDuration(), absl::Seconds(5), absl::Milliseconds(100),
    absl::Seconds(5)};
constexpr auto kBeat = absl::Milliseconds(20);
constexpr int kBeats = 5;
// The loop gives up after this long: the checks then fail.
constexpr auto kGiveUp = std::chrono::seconds(30);

// What other threads hand the loop: replies, and the eventfd that wakes it.
class Mailbox {
 public:
  Mailbox() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~Mailbox() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

  // Any thread: queue a reply for request `id`, and wake the loop.
  void Post(int id) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      replies_.push_back(id);
    }
    const uint64_t one = 1;
    (void)!write(fd_, &one, sizeof(one));
  }
  // The loop: clear the eventfd and take the replies.
  std::deque<int> Take() {
    uint64_t count;
    (void)!read(fd_, &count, sizeof(count));
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(replies_, {});
  }

 private:
  const int fd_;
  std::mutex mu_;
  std::deque<int> replies_;
};

// The loop's own state: only the loop thread touches it (tasks run there).
struct LoopState {
  Timeout deadline[4];     // request id -> its deadline
  bool timed_out[4] = {};  // set by the deadline's task
  bool early = false;      // a task ran before its deadline
  int beats = 0;
  bool reply_cancelled = false;  // the loop cancelled request 1's deadline
  bool done = false;
};

// Run by every deadline task: on the loop thread, with the loop's state.
void OnDeadline(LoopState& state, LocalTimer& timer, int id,
                const Timeout& self) {
  if (timer.now() < self.deadline()) state.early = true;
  state.timed_out[id] = true;
  fmt::print("  request {}: no reply within {}, answered with an error\n", id,
             absl::FormatDuration(kDeadlines[id]));
}

}  // namespace

int main() {
  auto timer = LocalTimer::Create().value();  // 1 ms tick, real clock
  Mailbox mailbox;
  const int epfd = epoll_create1(EPOLL_CLOEXEC);
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.fd = mailbox.fd();
  if (mailbox.fd() < 0 || epfd < 0 ||
      epoll_ctl(epfd, EPOLL_CTL_ADD, mailbox.fd(), &wake) != 0) {
    fmt::print("WRONG: cannot set up epoll and the eventfd\n");
    return 1;
  }

  LoopState state;
  for (int id = 1; id <= 3; ++id) {
    state.deadline[id] = timer
                             ->newTimeout(
                                 [&state, &timer, id](const Timeout& self) {
                                   OnDeadline(state, *timer, id, self);
                                 },
                                 kDeadlines[id])
                             .value();
  }
  timer
      ->newPeriodic(
          [&](const Timeout& self) {
            if (timer->now() < self.deadline()) state.early = true;
            fmt::print("  heartbeat {}\n", ++state.beats);
            if (state.beats == kBeats) self.cancel();  // that run is its last
          },
          kBeat, kBeat)
      .value();

  // The backend answers request 1 after 30 ms; request 2 it never answers.
  std::thread backend([&mailbox] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    mailbox.Post(1);
  });
  // A client thread abandons request 3: cancel() is safe from any thread.
  bool abandoned = false;
  std::thread client([&abandoned, deadline = state.deadline[3]] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    abandoned = deadline.cancel();
  });

  const auto give_up = std::chrono::steady_clock::now() + kGiveUp;
  while (!state.done && std::chrono::steady_clock::now() < give_up) {
    epoll_event events[8];
    const int n = epoll_wait(epfd, events, 8, timer->pollTimeoutMs());
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd != mailbox.fd()) continue;
      for (int id : mailbox.Take()) {
        state.reply_cancelled = state.deadline[id].cancel();
        fmt::print("  request {}: reply arrived, deadline cancelled: {}\n", id,
                   state.reply_cancelled);
      }
    }
    timer->advance();
    // Done once nothing is pending: the heartbeat ended, and every request
    // was answered, timed out or abandoned.
    state.done = timer->pendingTimeouts() == 0;
  }
  backend.join();
  client.join();
  close(epfd);

  const bool ok = state.done && !state.early && state.beats == kBeats &&
                  state.reply_cancelled && !state.timed_out[1] &&
                  state.timed_out[2] && abandoned && !state.timed_out[3] &&
                  timer->stop().empty();
  fmt::print("{}\n", timer->metrics().ToString());
  fmt::print("{}\n", ok ? "OK: one deadline fired, two were cancelled, "
                          "every heartbeat ran, none early"
                        : "WRONG");
  return ok ? 0 : 1;
}
