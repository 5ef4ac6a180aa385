#include "tools/line_logger.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace tickwheel::tools {

absl::StatusOr<std::unique_ptr<LineLogger>> LineLogger::Create(
    int fd, size_t capacity) {
  if (fd < 0) {
    return absl::InvalidArgumentError(fmt::format("bad descriptor {}", fd));
  }
  if (capacity == 0) return absl::InvalidArgumentError("capacity must be > 0");
  std::unique_ptr<LineLogger> logger(new LineLogger(fd, capacity));
  {
    internal::MutexLock lock(&logger->join_mu_);
    logger->writer_ = std::thread([p = logger.get()] { p->WriterLoop(); });
  }
  return logger;
}

LineLogger::LineLogger(int fd, size_t capacity)
    : fd_(fd), capacity_(capacity) {}

LineLogger::~LineLogger() { Stop(); }

LineLoggerStats LineLogger::Stop() {
  {
    internal::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  internal::MutexLock lock(&join_mu_);
  if (writer_.joinable()) writer_.join();
  return stats();
}

bool LineLogger::Post(std::string line) {
  line.push_back('\n');
  {
    internal::MutexLock lock(&mu_);
    if (!stopping_ && queue_.size() < capacity_) {
      queue_.push_back(std::move(line));
      cv_.notify_one();
      return true;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return false;  // `line` is freed outside the lock
}

LineLoggerStats LineLogger::stats() const {
  LineLoggerStats s;
  s.written = written_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.failed = failed_.load(std::memory_order_relaxed);
  return s;
}

void LineLogger::WriterLoop() {
  // SIGPIPE is thread-directed: blocked here, a write to a closed pipe
  // returns EPIPE instead of ending the process.
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, nullptr);
  std::deque<std::string> batch;
  for (;;) {
    {
      internal::MutexLock lock(&mu_);
      cv_.wait(mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      });
      if (queue_.empty()) return;  // stopping, and everything is written
      batch.swap(queue_);
    }
    for (const std::string& line : batch) {
      (WriteAll(line) ? written_ : failed_)
          .fetch_add(1, std::memory_order_relaxed);
    }
    batch.clear();
  }
}

bool LineLogger::WriteAll(const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = write(fd_, line.data() + done, line.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      (void)poll(&p, 1, -1);  // the writer's own thread: waiting is its job
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace tickwheel::tools
