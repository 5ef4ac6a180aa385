#include "tests/stress_ledger.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace tickwheel::stress {
namespace {

// Reports the first 20 broken promises of a round, each naming its task.
class Reporter {
 public:
  void operator()(int64_t id, const std::string& what) {
    if (++reported_ <= 20) ADD_FAILURE() << "task " << id << ": " << what;
  }

 private:
  int reported_ = 0;
};

// A periodic timeout: any number of runs, never two at once, and ended by
// exactly one of cancel(), stop() or (failing both) a cancelAll().
void CheckPeriodic(int64_t id, const Entry& e, int in_stop,
                   StressCounts& counts, Reporter& report) {
  const int runs = e.runs.load(), cancelled = e.cancelled.load();
  ++counts.periodic;
  counts.periodic_runs += runs;
  if (e.overlaps.load() != 0) report(id, "periodic runs overlapped");
  // The run the worker had claimed when cancel() came may still begin; no
  // later one.
  if (e.runs_after_cancel.load() > 1) {
    report(id, fmt::format("{} periodic runs began after cancel() returned",
                           e.runs_after_cancel.load()));
  }
  if (cancelled + in_stop > 1) {
    report(id, fmt::format("periodic: cancelled {} stopped {}", cancelled,
                           in_stop));
  }
  counts.by_cancel_all += 1 - cancelled - in_stop;
}

// A one-shot timeout: ran once, cancelled once, stopped once or (none of
// these) cancelled by a cancelAll().
void CheckOneShot(int64_t id, const Entry& e, int in_stop, StressCounts& counts,
                  Reporter& report) {
  const int runs = e.runs.load(), cancelled = e.cancelled.load();
  counts.ran += runs;
  if (runs + cancelled + in_stop > 1) {
    report(id, fmt::format("ran {} cancelled {} stopped {} (want one)", runs,
                           cancelled, in_stop));
  }
  counts.by_cancel_all += 1 - runs - cancelled - in_stop;
}

void CheckEntry(int64_t id, const Entry& e, int in_stop, StressCounts& counts,
                Reporter& report) {
  const int accepted = e.accepted.load(), rejected = e.rejected.load();
  const int destroyed = e.destroyed.load();
  ++counts.attempts;
  if (accepted + rejected != 1) {
    report(id, fmt::format("accepted={} rejected={}", accepted, rejected));
  }
  if (destroyed != 1) {
    report(id, fmt::format("captures destroyed {} times", destroyed));
  }
  if (e.early.load() != 0) report(id, "ran before its deadline");
  if (e.bad_code.load() != 0) report(id, "rejected with a wrong status");
  if (rejected == 1) {
    ++counts.rejected;
    if (e.runs.load() + e.cancelled.load() + in_stop != 0) {
      report(id, "rejected yet ran, was cancelled or stopped");
    }
    return;
  }
  ++counts.accepted;
  counts.cancelled += e.cancelled.load();
  counts.stopped += in_stop;
  counts.resets += e.resets.load();
  if (e.periodic.load()) {
    CheckPeriodic(id, e, in_stop, counts, report);
  } else {
    CheckOneShot(id, e, in_stop, counts, report);
  }
}

}  // namespace

void StressCounts::Add(const StressCounts& o) {
  operations += o.operations;
  attempts += o.attempts;
  accepted += o.accepted;
  rejected += o.rejected;
  ran += o.ran;
  cancelled += o.cancelled;
  stopped += o.stopped;
  from_tasks += o.from_tasks;
  periodic += o.periodic;
  periodic_runs += o.periodic_runs;
  resets += o.resets;
  by_cancel_all += o.by_cancel_all;
}

std::string StressCounts::ToString() const {
  return fmt::format(
      "{} operations: {} newTimeout ({} from tasks), {} accepted, {} "
      "rejected; {} ran, {} cancelled, {} returned by stop(); {} periodic "
      "with {} runs; {} resets; {} cancelled by cancelAll()",
      operations, attempts, from_tasks, accepted, rejected, ran, cancelled,
      stopped, periodic, periodic_runs, resets, by_cancel_all);
}

StressCounts CheckLedger(const Entry* entries, int64_t n,
                         const std::vector<int>& in_stop,
                         int64_t cancelled_by_all) {
  StressCounts counts;
  Reporter report;
  for (int64_t id = 0; id < n; ++id) {
    CheckEntry(id, entries[id], in_stop[id], counts, report);
  }
  EXPECT_EQ(counts.by_cancel_all, cancelled_by_all)
      << "timeouts that ended by none of run, cancel() and stop(), against "
         "the sum of cancelAll()'s counts";
  return counts;
}

}  // namespace tickwheel::stress
