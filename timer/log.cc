#include "timer/log.h"

#include <cstdio>
#include <mutex>
#include <utility>

#include <fmt/format.h>

namespace tickwheel {
namespace {

void StderrSink(LogSeverity severity, std::string_view message) {
  fmt::print(stderr, "[tickwheel {}] {}\n", LogSeverityName(severity), message);
}

std::mutex& SinkMutex() {
  static std::mutex* const mu = new std::mutex;
  return *mu;
}

// Guarded by SinkMutex(). Leaked on purpose: workers may log during static
// destruction.
LogSink& CurrentSink() {
  static LogSink* const sink = new LogSink(StderrSink);
  return *sink;
}

}  // namespace

LogSink SetLogSink(LogSink sink) {
  if (!sink) sink = StderrSink;
  std::lock_guard<std::mutex> lock(SinkMutex());
  return std::exchange(CurrentSink(), std::move(sink));
}

void Log(LogSeverity severity, std::string_view message) {
  // Called under the mutex so that a sink replaced concurrently is never
  // destroyed while it runs, and messages from several workers do not
  // interleave.
  std::lock_guard<std::mutex> lock(SinkMutex());
  CurrentSink()(severity, message);
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

}  // namespace tickwheel
