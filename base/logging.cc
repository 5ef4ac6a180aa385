#include "tickwheel/base/logging.h"

#include <cstdio>
#include <exception>
#include <typeinfo>
#include <utility>

#include <fmt/format.h>

#include "absl/base/thread_annotations.h"
#include "tickwheel/base/mutex.h"

namespace tickwheel::internal {
namespace {

void StderrSink(LogSeverity severity, std::string_view message) {
  fmt::print(stderr, "[tickwheel {}] {}\n", LogSeverityName(severity), message);
}

Mutex& SinkMutex() {
  static Mutex* const mu = new Mutex;
  return *mu;
}

// Guarded by SinkMutex(). Leaked on purpose: workers may log during static
// destruction.
LogSink& CurrentSink() ABSL_EXCLUSIVE_LOCKS_REQUIRED(SinkMutex()) {
  static LogSink* const sink = new LogSink(StderrSink);
  return *sink;
}

}  // namespace

LogSink SetLogSink(LogSink sink) {
  if (!sink) sink = StderrSink;
  MutexLock lock(&SinkMutex());
  return std::exchange(CurrentSink(), std::move(sink));
}

void Log(LogSeverity severity, std::string_view message) {
  // Called under the mutex so that a sink replaced concurrently is never
  // destroyed while it runs, and messages from several workers do not
  // interleave.
  MutexLock lock(&SinkMutex());
  CurrentSink()(severity, message);
}

void LogCurrentException(std::string_view who, std::string_view then) {
  try {
    throw;
  } catch (const std::exception& e) {
    Log(LogSeverity::kError, fmt::format("{} threw {}: {}; {}", who,
                                         typeid(e).name(), e.what(), then));
  } catch (...) {
    Log(LogSeverity::kError,
        fmt::format("{} threw a non-std::exception; {}", who, then));
  }
}

std::string_view LogSeverityName(LogSeverity severity) {
  switch (severity) {
    case LogSeverity::kInfo:
      return "INFO";
    case LogSeverity::kWarning:
      return "WARNING";
    case LogSeverity::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

}  // namespace tickwheel::internal
