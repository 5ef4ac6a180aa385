#include "tests/model/fuzz_harness.h"

#include <atomic>
#include <vector>

#include <fmt/format.h>

#include "tests/model/fuzz_compare.h"
#include "tests/model/fuzz_context.h"
#include "tests/model/fuzz_input.h"
#include "tests/model/fuzz_ops.h"
#include "tests/model/fuzz_races.h"
#include "tests/model/fuzz_real_side.h"
#include "tests/model/timer_model.h"

namespace tickwheel::model {
namespace {

std::atomic<int64_t> ops_executed{0};
std::atomic<int64_t> races_executed{0};

// Decodes and applies operations until the input or kMaxOps runs out;
// `check` compares the whole state after each. Returns the first difference.
template <typename Check>
std::string RunOps(Reader& in, FuzzContext& c, const Check& check) {
  for (int op = 0; op < kMaxOps && !in.empty(); ++op) {
    const uint8_t raw = in.Byte();
    ops_executed.fetch_add(1, std::memory_order_relaxed);
    std::string diff;
    if (raw >= 0xF8) {
      diff = RunLaterOp(raw & 7, in, c);
    } else if (raw >= 0xF0) {
      diff = RunRace(raw & 7, in, c);
    } else {
      const uint8_t opcode = raw & 15;
      if (c.model.destroyed() && !ActsOnHandlesOnly(opcode)) continue;
      diff = RunOp(opcode, in, c);
    }
    if (diff.empty()) diff = check();
    if (!diff.empty()) return diff;
  }
  return "";
}

// The end: stop, take every task back, destroy. Nothing may be left alive.
template <typename Check>
std::string Finish(FuzzContext& c, const Check& check) {
  if (!c.model.destroyed()) {
    Code code;
    const std::vector<int64_t> r = c.real.Stop(&code);
    const std::vector<int64_t> m = c.model.Stop();
    c.trace += fmt::format("  final stop() -> [{}]\n", fmt::join(r, ","));
    if (std::string d = CompareStop(c.model, code, r, m); !d.empty()) return d;
    for (int64_t id : r) {
      if (c.real.TakeTask(id) != c.model.TakeTask(id)) {
        return fmt::format("takeTask(#{}) after the final stop()", id);
      }
    }
    c.real.Destroy();
    c.model.Destroy();
  }
  if (std::string d = check(); !d.empty()) return d;
  c.real.DropHandles();
  for (int64_t id = 0; id < c.model.next_id(); ++id) {
    if (c.real.alive(id) != 0) {
      return fmt::format("task {}: captures still alive at the end", id);
    }
  }
  return "";
}

}  // namespace

void CountRace() { races_executed.fetch_add(1, std::memory_order_relaxed); }

int64_t FuzzOpsExecuted() { return ops_executed.load(); }
int64_t FuzzRacesExecuted() { return races_executed.load(); }

std::string RunFuzzInput(const uint8_t* data, size_t size) {
  InstallLogSinkOnce();
  Reader in(data, size);
  const FuzzConfig config = DecodeConfig(in);
  RealSide real(config);
  if (!real.create_status().ok()) {
    return fmt::format("Timer::Create failed for a valid config {}: {}",
                       config.ToString(), real.create_status().ToString());
  }
  TimerModel model({.tick_nanos = config.tick_nanos,
                    .max_pending = config.max_pending,
                    .clock_start = config.clock_start});
  FuzzContext c(real, model, config);
  const int64_t throws_before = TaskThrowsLogged();
  auto check = [&]() -> std::string {
    std::string diff = Compare(model, real, throws_before);
    if (diff.empty()) diff = model.CheckContract();
    return diff;
  };
  std::string diff = RunOps(in, c, check);
  if (diff.empty()) diff = Finish(c, check);
  if (diff.empty()) return "";
  return fmt::format("MISMATCH: {}\nconfig: {}\noperations:\n{}{}", diff,
                     config.ToString(), c.trace, model.Describe());
}

}  // namespace tickwheel::model
