// timer/log.h
// -----------------------------------------------------------------------------
// The one place where tickwheel reports things: a task that threw, a task
// executor that threw, too many Timer instances. By default messages go to
// stderr as "[tickwheel WARNING] ..."; a server replaces the sink to route
// them into its own logging.
//
// Example:
//   tickwheel::SetLogSink([](tickwheel::LogSeverity s, std::string_view msg) {
//     MyLogger::Write(s == tickwheel::LogSeverity::kError ? ERROR : WARN, msg);
//   });
//
// The sink may be called from any thread (usually a timer's worker), possibly
// from several at once; it must be thread-safe and must not call back into the
// Timer that logs (a stop() from the sink would deadlock on the worker).
//
// These functions are thread-safe.

#ifndef TICKWHEEL_TIMER_LOG_H_
#define TICKWHEEL_TIMER_LOG_H_

#include <functional>
#include <utility>
#include <string_view>

namespace tickwheel {

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
// through it, and the try block costs nothing where it is inlined, while an
// out-of-line call cost ~17 instructions per task (callgrind).
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

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_LOG_H_
