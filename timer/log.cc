#include "tickwheel/timer/log.h"

#include <utility>

#include "absl/base/thread_annotations.h"
#include "tickwheel/base/logging.h"
#include "tickwheel/base/mutex.h"

namespace tickwheel {
namespace {

static_assert(static_cast<int>(LogSeverity::kInfo) ==
                  static_cast<int>(internal::Severity::kInfo) &&
              static_cast<int>(LogSeverity::kWarning) ==
                  static_cast<int>(internal::Severity::kWarning) &&
              static_cast<int>(LogSeverity::kError) ==
                  static_cast<int>(internal::Severity::kError));

internal::Mutex& SinkMutex() {
  static internal::Mutex* const mu = new internal::Mutex;
  return *mu;
}

// The user's sink. Leaked on purpose: workers may log during static
// destruction.
LogSink& CurrentSink() ABSL_EXCLUSIVE_LOCKS_REQUIRED(SinkMutex()) {
  static LogSink* const sink = new LogSink;
  return *sink;
}

// The base layer's handler while a sink is installed.
void ToSink(internal::Severity severity, std::string_view message) {
  internal::MutexLock lock(&SinkMutex());
  if (const LogSink& sink = CurrentSink()) {
    sink(static_cast<LogSeverity>(severity), message);
  }
}

}  // namespace

LogSink SetLogSink(LogSink sink) {
  internal::MutexLock lock(&SinkMutex());
  internal::SetLogHandler(sink ? &ToSink : nullptr);
  return std::exchange(CurrentSink(), std::move(sink));
}

void Log(LogSeverity severity, std::string_view message) {
  internal::Log(static_cast<internal::Severity>(severity), message);
}

std::string_view LogSeverityName(LogSeverity severity) {
  return internal::SeverityName(static_cast<internal::Severity>(severity));
}

}  // namespace tickwheel
