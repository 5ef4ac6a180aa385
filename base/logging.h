// base/logging.h
// -----------------------------------------------------------------------------
// Internal. The one place where tickwheel reports things (a task that threw, a
// task executor that threw, too many Timer instances), and how it runs user
// callbacks so that no exception escapes them. The public face is
// timer/log.h, which users include to replace the sink; the engine and the
// idle tracker log through this header, so that they need no facade header.
//
// By default messages go to stderr as "[tickwheel WARNING] ...".
//
// These functions are thread-safe.

#ifndef TICKWHEEL_BASE_LOGGING_H_
#define TICKWHEEL_BASE_LOGGING_H_

#include <functional>
#include <string_view>
#include <utility>

namespace tickwheel::internal {

enum class LogSeverity { kInfo, kWarning, kError };

using LogSink = std::function<void(LogSeverity, std::string_view)>;

// Installs `sink` for every timer in the process and returns the previous one.
// An empty sink restores the default (stderr).
LogSink SetLogSink(LogSink sink);

// Sends one message to the current sink. Cost: a mutex and a call.
void Log(LogSeverity severity, std::string_view message);

// "INFO", "WARNING" or "ERROR".
std::string_view LogSeverityName(LogSeverity severity);

// Logs the exception being handled (call it from a catch block) as an error:
// "<who> threw <type>: <what>; <then>", or "<who> threw a non-std::exception;
// <then>".
void LogCurrentException(std::string_view who, std::string_view then);

// Runs `f()`. An exception it throws is logged (LogCurrentException) and goes
// no further: how tickwheel runs user callbacks, so that no exception crosses
// its API or kills its worker. Always inline: the worker runs every task
// through it, and a try block costs nothing where it is inlined, while an
// out-of-line call is a frame per task.
template <typename F>
[[gnu::always_inline]] inline void RunLoggingExceptions(std::string_view who,
                                                        std::string_view then,
                                                        F&& f) {
  try {
    std::forward<F>(f)();
  } catch (...) {
    LogCurrentException(who, then);
  }
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_LOGGING_H_
