// base/logging.h
// -----------------------------------------------------------------------------
// Internal. How tickwheel's own code reports things (a task that threw, a
// task executor that threw, too many Timer instances), and how it runs user
// callbacks so that no exception escapes them.
//
// Messages go to a handler that the facade installs when a user replaces
// the log sink (timer/log.h, SetLogSink()), or to stderr as
// "[tickwheel WARNING] ..." while none is installed. The public types
// (LogSeverity, LogSink) are the facade's; this layer numbers severities the
// same way and knows nothing else of them.
//
// These functions are thread-safe.

#ifndef TICKWHEEL_BASE_LOGGING_H_
#define TICKWHEEL_BASE_LOGGING_H_

#include <string_view>
#include <utility>

namespace tickwheel::internal {

// As tickwheel::LogSeverity numbers them (timer/log.h checks it).
enum class Severity : int { kInfo = 0, kWarning = 1, kError = 2 };

// "INFO", "WARNING" or "ERROR".
std::string_view SeverityName(Severity severity);

// Where messages go: a function that must be thread-safe. nullptr restores
// stderr. Cost: an atomic store.
using LogHandler = void (*)(Severity, std::string_view);
void SetLogHandler(LogHandler handler);

// Sends one message to the handler, or to stderr. Cost: an atomic load and
// a call (stderr: a mutex and a write).
void Log(Severity severity, std::string_view message);

// Logs the exception being handled (call it from a catch block) as an error:
// "<who> threw <type>: <what>; <then>", or "<who> threw a non-std::exception;
// <then>".
void LogCurrentException(std::string_view who, std::string_view then);

// Runs `f()`. An exception it throws is logged (LogCurrentException) and goes
// no further: how tickwheel runs user callbacks, so that no exception crosses
// its API or kills its worker. Always inline: the worker runs every task
// through it, and a try block costs nothing where it is inlined, while an
// out-of-line call is a frame per task. The messages are taken by reference,
// so that only the handler reads them: a caller's member (a TaskRunner's
// `goes_on`) is not copied out for every call.
template <typename F>
[[gnu::always_inline]] inline void RunLoggingExceptions(
    const std::string_view& who, const std::string_view& then, F&& f) {
  try {
    std::forward<F>(f)();
  } catch (...) {
    LogCurrentException(who, then);
  }
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_LOGGING_H_
