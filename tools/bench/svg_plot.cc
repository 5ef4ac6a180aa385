#include "tools/bench/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "tools/bench/results.h"

namespace tickwheel::bench {
namespace {

constexpr double kWidth = 1000, kHeight = 500;
constexpr double kTop = 70, kBottom = 370;           // plot area, both panels
constexpr double kLeft[2] = {80, 580}, kPanelWidth = 380;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string Microseconds(double us) {
  if (us >= 1e6) return fmt::format("{:g} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:g} ms", us / 1e3);
  return fmt::format("{:g} µs", us);
}

// Logarithmic lateness axis shared by both panels.
struct XAxis {
  double lo_log, hi_log;
  double Pos(int panel, double us) const {
    const double l = std::clamp(std::log10(std::max(us, 1e-9)), lo_log, hi_log);
    return kLeft[panel] + (l - lo_log) / (hi_log - lo_log) * kPanelWidth;
  }
};

// Ranks to draw: about 400 spread evenly, plus the last 1000 (the tail).
std::vector<size_t> Ranks(size_t n) {
  std::vector<size_t> r;
  const size_t stride = std::max<size_t>(1, n / 400);
  for (size_t i = 0; i < n; i += stride) r.push_back(i);
  for (size_t i = n > 1000 ? n - 1000 : 0; i < n; ++i) r.push_back(i);
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

}  // namespace

bool WriteLatenessSvg(const std::string& path,
                      const std::vector<LatenessSeries>& series,
                      const std::string& title, const std::string& subtitle,
                      double target_us, std::string& error) {
  double max_us = std::max(10.0, target_us);
  size_t max_n = 10;
  for (const LatenessSeries& s : series) {
    if (s.sorted_us.empty()) continue;
    max_us = std::max(max_us, s.sorted_us.back());
    max_n = std::max(max_n, s.sorted_us.size());
  }
  const XAxis x{0, std::ceil(std::log10(max_us))};
  const double tail_decades = std::ceil(std::log10(static_cast<double>(max_n)));
  auto tail_y = [&](double fraction) {
    return kTop + (-std::log10(fraction)) / tail_decades * (kBottom - kTop);
  };
  auto cdf_y = [&](double fraction) {
    return kBottom - fraction * (kBottom - kTop);
  };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kWidth, kHeight);
  svg += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n",
                     kWidth / 2, Escape(title));
  svg += fmt::format("<text x=\"{}\" y=\"44\" text-anchor=\"middle\" fill=\"#444\">{}</text>\n",
                     kWidth / 2, Escape(subtitle));

  const char* panel_titles[2] = {"CDF: fraction run at most x late",
                                 "Tail: fraction run at least x late (log)"};
  for (int p = 0; p < 2; ++p) {
    const double x0 = kLeft[p], x1 = kLeft[p] + kPanelWidth;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       (x0 + x1) / 2, kTop - 8, panel_titles[p]);
    // Vertical grid and labels at decades.
    for (int d = static_cast<int>(x.lo_log); d <= static_cast<int>(x.hi_log); ++d) {
      const double px = x.Pos(p, std::pow(10.0, d));
      svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>\n",
                         px, kTop, kBottom);
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                         px, kBottom + 16, Microseconds(std::pow(10.0, d)));
    }
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">lateness (log scale)</text>\n",
                       (x0 + x1) / 2, kBottom + 34);
    // Horizontal grid.
    if (p == 0) {
      for (int i = 0; i <= 4; ++i) {
        const double f = i / 4.0, py = cdf_y(f);
        svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>\n",
                           x0, py, x1);
        svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n",
                           x0 - 6, py + 4, f);
      }
    } else {
      for (int d = 0; d <= static_cast<int>(tail_decades); ++d) {
        const double py = tail_y(std::pow(10.0, -d));
        svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>\n",
                           x0, py, x1);
        const std::string label =
            d == 0 ? "1" : d == 1 ? "0.1" : d == 2 ? "0.01" : fmt::format("1e-{}", d);
        svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                           x0 - 6, py + 4, label);
      }
    }
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n",
                       x0, kTop, kPanelWidth, kBottom - kTop);
    const double tx = x.Pos(p, target_us);
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#000\" "
                       "stroke-dasharray=\"5,4\"/>\n", tx, kTop, kBottom);
    // Curves.
    for (size_t si = 0; si < series.size(); ++si) {
      const std::vector<double>& v = series[si].sorted_us;
      if (v.empty()) continue;
      const double n = static_cast<double>(v.size());
      std::string points;
      for (size_t i : Ranks(v.size())) {
        const double fraction = p == 0 ? (static_cast<double>(i) + 1) / n
                                       : (n - static_cast<double>(i)) / n;
        points += fmt::format("{:.1f},{:.1f} ", x.Pos(p, v[i]),
                              p == 0 ? cdf_y(fraction) : tail_y(fraction));
      }
      svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" points=\"{}\"/>\n",
                         kColors[si % 4], points);
    }
  }

  // Legend.
  double ly = kBottom + 60;
  for (size_t si = 0; si < series.size(); ++si) {
    const std::vector<double>& v = series[si].sorted_us;
    std::string text = series[si].name + ": no samples";
    if (!v.empty()) {
      const auto early = std::count_if(v.begin(), v.end(), [](double d) { return d < 0; });
      text = fmt::format("{}: p50 {:.0f} µs, p99 {:.0f} µs, max {:.0f} µs, early {}, n = {}",
                         series[si].name, Quantile(v, 0.5), Quantile(v, 0.99),
                         v.back(), early, v.size());
    }
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"/>\n",
                       kLeft[0], ly - 4, kLeft[0] + 30, kColors[si % 4]);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\">{}</text>\n", kLeft[0] + 40, ly,
                       Escape(text));
    ly += 18;
  }
  svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" fill=\"#444\">dashed: target, tick + 2 ms = {}. "
                     "Lateness = run time - (time before the schedule call + delay); "
                     "below 1 µs drawn at 1 µs.</text>\n",
                     kLeft[0], ly + 4, Microseconds(target_us));
  svg += "</svg>\n";

  std::ofstream out(path);
  out << svg;
  out.close();
  if (!out) {
    error = fmt::format("cannot write {}", path);
    return false;
  }
  return true;
}

}  // namespace tickwheel::bench
