// tools/line_logger.h
// -----------------------------------------------------------------------------
// LineLogger: writes lines to a descriptor on a thread of its own, so that
// the threads that log never wait for it. tools/echo_server logs each closed
// connection through one.
//
// Why a thread: the echo server's on_close runs inside its I/O loop, and a
// write to stdout can block for as long as the reader of that terminal or
// pipe likes (a paused terminal, a pager, a stopped or slow log collector):
// the loop, and every connection with it, would wait. LineLogger moves the
// writing to a thread of its own. Post() only appends to a bounded queue,
// under a mutex that no thread holds across I/O (the writer holds it only to
// swap the queue out), and signals a condition variable; when the queue is
// full, the line is dropped and counted. Losing log lines, and saying how
// many, is better than stalling the loop or growing memory without limit.
// Setting O_NONBLOCK on stdout instead was rejected: the flag belongs to the
// open file description, which the shell and other processes share (they
// would start getting EAGAIN), and a partial write would still need
// somewhere to keep the rest.

#ifndef TICKWHEEL_TOOLS_LINE_LOGGER_H_
#define TICKWHEEL_TOOLS_LINE_LOGGER_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "tickwheel/base/mutex.h"

namespace tickwheel::tools {

// What a LineLogger did with the lines posted to it.
struct LineLoggerStats {
  int64_t written = 0;  // lines written in full
  int64_t dropped = 0;  // lines Post() refused: the queue was full (or stopped)
  int64_t failed = 0;   // lines whose write failed (EPIPE, EIO...)
};

// Writes lines to a descriptor on a thread of its own, so that the threads
// that log never wait for the descriptor (see the file comment). This class
// is thread-safe.
class LineLogger {
 public:
  // Starts the writer thread, which writes to `fd` with write(2) (blocking
  // descriptors wait; non-blocking ones are polled) with SIGPIPE blocked, so
  // a closed pipe fails the line (counted in `failed`) instead of killing
  // the process. `fd` is not owned and must stay open until Stop() (or the
  // destructor) returns. At most `capacity` lines wait in the queue (and as
  // many more may be in the writer's hands).
  // InvalidArgument: fd < 0 or capacity == 0.
  static absl::StatusOr<std::unique_ptr<LineLogger>> Create(int fd,
                                                            size_t capacity);
  // Stop().
  ~LineLogger();
  LineLogger(const LineLogger&) = delete;
  LineLogger& operator=(const LineLogger&) = delete;

  // Queues `line` plus a '\n' and returns true; or, when `capacity` lines
  // already wait (or after Stop()), drops it, counts it and returns false.
  // Never waits for the descriptor; the mutex it takes is only ever held
  // for a push, a swap or setting a flag.
  bool Post(std::string line);

  // Writes the lines still queued (waiting for the descriptor as long as it
  // takes), joins the writer thread and returns the final counts. Later
  // calls only return the counts.
  LineLoggerStats Stop();

  LineLoggerStats stats() const;

 private:
  LineLogger(int fd, size_t capacity);
  void WriterLoop();
  bool WriteAll(const std::string& line);

  const int fd_;
  const size_t capacity_;
  internal::Mutex mu_;
  std::condition_variable_any cv_;  // queue_ not empty, or stopping_
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<int64_t> written_{0};
  std::atomic<int64_t> dropped_{0};
  std::atomic<int64_t> failed_{0};
  internal::Mutex join_mu_;  // one joiner at a time
  std::thread writer_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace tickwheel::tools

#endif  // TICKWHEEL_TOOLS_LINE_LOGGER_H_
