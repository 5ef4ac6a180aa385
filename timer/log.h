// timer/log.h
// -----------------------------------------------------------------------------
// Where tickwheel's messages go: a task that threw, a task executor that
// threw, too many Timer instances. By default they go to stderr as
// "[tickwheel WARNING] ..."; a server replaces the sink to route them into its
// own logging.
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

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <functional>
#include <string_view>

namespace tickwheel {

enum class LogSeverity { kInfo, kWarning, kError };

// Receives each message with its severity.
using LogSink = std::function<void(LogSeverity, std::string_view)>;

// Installs `sink` for every timer in the process and returns the previous
// one (empty while the default is in place). An empty sink restores the
// default (stderr). Cost: a mutex.
LogSink SetLogSink(LogSink sink);

// Sends one message to the current sink. The sink is called under a
// process-wide mutex: messages from several workers do not interleave, and a
// sink replaced meanwhile is not destroyed while it runs. Cost: a mutex and
// a call.
void Log(LogSeverity severity, std::string_view message);

// "INFO", "WARNING" or "ERROR".
std::string_view LogSeverityName(LogSeverity severity);

}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_LOG_H_
