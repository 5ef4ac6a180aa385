// tools/bench/svg_plot.h
// -----------------------------------------------------------------------------
// --svg FILE: the W3 lateness distribution of each model, drawn by the
// program itself as a standalone SVG (no plotting tool needed). Two panels
// with a shared logarithmic lateness axis (µs):
//   left   the CDF: fraction of timeouts that ran at most x late (linear);
//   right  the tail: fraction that ran at least x late (logarithmic), where
//          p99 is the crossing of 10^-2 and the last point is the maximum.
// A dashed vertical line marks the target (tick + 2 ms). Lateness below 1 µs
// (and early fires, which would be negative) is drawn at the left edge;
// early fires are counted in the legend.

#ifndef TICKWHEEL_TOOLS_BENCH_SVG_PLOT_H_
#define TICKWHEEL_TOOLS_BENCH_SVG_PLOT_H_

#include <string>
#include <vector>

namespace tickwheel::bench {

struct LatenessSeries {
  std::string name;
  std::vector<double> sorted_us;  // ascending
};

// Returns false with a message in `error` if the file cannot be written.
bool WriteLatenessSvg(const std::string& path,
                      const std::vector<LatenessSeries>& series,
                      const std::string& title, const std::string& subtitle,
                      double target_us, std::string& error);

}  // namespace tickwheel::bench

#endif  // TICKWHEEL_TOOLS_BENCH_SVG_PLOT_H_
