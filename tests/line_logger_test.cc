// tests/line_logger_test.cc
// -----------------------------------------------------------------------------
// LineLogger (tools/line_logger.h), which tools/echo_server logs through, on
// pipes: a pipe that is read gets every line, in order and whole; one that
// is not read makes Post() drop lines rather than block; a closed one fails
// lines rather than kill the process. Every wait is on a pipe that will be
// read or closed; no test asserts how fast anything happens.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "tools/line_logger.h"

namespace tickwheel {
namespace {

// Reads `fd` to EOF on a thread of its own; Join() returns what it read.
class PipeReader {
 public:
  explicit PipeReader(int fd)
      : thread_([this, fd] {
          char buf[4096];
          for (;;) {
            const ssize_t n = read(fd, buf, sizeof(buf));
            if (n > 0) data_.append(buf, static_cast<size_t>(n));
            if (n == 0 || (n < 0 && errno != EINTR)) return;
          }
        }) {}
  std::string Join() {
    thread_.join();
    return data_;
  }

 private:
  std::string data_;  // the thread's until joined
  std::thread thread_;
};

std::string LogLine(int i) {
  std::string line = "connection #" + std::to_string(i) + " closed ";
  line.resize(99, '.');  // 100 bytes with the logger's '\n'
  return line;
}

TEST(LineLoggerTest, WritesEveryLineInOrder) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0) << std::strerror(errno);
  PipeReader reader(p[0]);
  constexpr int kLines = 1000;
  auto logger = tools::LineLogger::Create(p[1], kLines).value();
  std::string expected;
  for (int i = 0; i < kLines; ++i) {
    EXPECT_TRUE(logger->Post(LogLine(i)));
    expected += LogLine(i) + "\n";
  }
  const tools::LineLoggerStats st = logger->Stop();
  EXPECT_FALSE(logger->Post("after Stop()"));
  close(p[1]);
  EXPECT_TRUE(reader.Join() == expected) << "lines lost, reordered or torn";
  EXPECT_EQ(st.written, kLines);
  EXPECT_EQ(st.dropped, 0);
  EXPECT_EQ(st.failed, 0);
  EXPECT_EQ(logger->stats().dropped, 1);
  close(p[0]);
}

// Nobody reads the pipe while lines are posted, so the writer thread blocks
// on it for good: Post() must still return (the test would hang otherwise),
// dropping lines beyond the queue, and every line it accepted must come out
// once the pipe is read, in order.
TEST(LineLoggerTest, DropsLinesInsteadOfBlockingWhenTheOutputStalls) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0) << std::strerror(errno);
  const int pipe_bytes = fcntl(p[1], F_GETPIPE_SZ);
  ASSERT_GT(pipe_bytes, 0) << std::strerror(errno);
  constexpr size_t kCapacity = 8;
  // Four times what the pipe, the queue and the writer's batch can hold.
  const int lines = 4 * (pipe_bytes / 100 + 2 * static_cast<int>(kCapacity));
  auto logger = tools::LineLogger::Create(p[1], kCapacity).value();
  std::string accepted;
  int refused = 0;
  for (int i = 0; i < lines; ++i) {
    if (logger->Post(LogLine(i))) {
      accepted += LogLine(i) + "\n";
    } else {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_EQ(logger->stats().dropped, refused);
  PipeReader reader(p[0]);
  const tools::LineLoggerStats st = logger->Stop();
  close(p[1]);
  EXPECT_TRUE(reader.Join() == accepted) << "accepted lines lost or reordered";
  EXPECT_EQ(st.written + st.dropped, lines);
  EXPECT_EQ(st.failed, 0);
  close(p[0]);
}

// A closed pipe fails the line (EPIPE; SIGPIPE is blocked on the writer
// thread) instead of killing the process.
TEST(LineLoggerTest, CountsLinesThatCannotBeWritten) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0) << std::strerror(errno);
  close(p[0]);
  auto logger = tools::LineLogger::Create(p[1], 16).value();
  EXPECT_TRUE(logger->Post("nobody reads this"));
  const tools::LineLoggerStats st = logger->Stop();
  EXPECT_EQ(st.failed, 1);
  EXPECT_EQ(st.written, 0);
  close(p[1]);
}

TEST(LineLoggerTest, CreateRejectsBadArguments) {
  EXPECT_EQ(tools::LineLogger::Create(-1, 16).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tools::LineLogger::Create(STDOUT_FILENO, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tickwheel
