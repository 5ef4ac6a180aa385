#include "tickwheel/base/logging.h"

#include <atomic>
#include <cstdio>
#include <exception>
#include <typeinfo>

#include <fmt/format.h>

#include "tickwheel/base/mutex.h"

namespace tickwheel::internal {
namespace {

std::atomic<LogHandler> handler{nullptr};

void ToStderr(Severity severity, std::string_view message) {
  // One line at a time, so that messages from several workers do not
  // interleave. Leaked on purpose: workers may log during static
  // destruction.
  static Mutex* const mu = new Mutex;
  MutexLock lock(mu);
  fmt::print(stderr, "[tickwheel {}] {}\n", SeverityName(severity), message);
}

}  // namespace

void SetLogHandler(LogHandler h) {
  handler.store(h, std::memory_order_release);
}

void Log(Severity severity, std::string_view message) {
  if (LogHandler h = handler.load(std::memory_order_acquire)) {
    h(severity, message);
  } else {
    ToStderr(severity, message);
  }
}

void LogCurrentException(std::string_view who, std::string_view then) {
  try {
    throw;
  } catch (const std::exception& e) {
    Log(Severity::kError, fmt::format("{} threw {}: {}; {}", who,
                                      typeid(e).name(), e.what(), then));
  } catch (...) {
    Log(Severity::kError,
        fmt::format("{} threw a non-std::exception; {}", who, then));
  }
}

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "INFO";
    case Severity::kWarning:
      return "WARNING";
    case Severity::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

}  // namespace tickwheel::internal
