// Inline SVG plots for the tuning report: axes with round ticks, dots, a
// best-so-far step line, horizontal reference lines and error marks. Dots of
// one series are one <path> (a zero-length segment with a round cap each), so
// that a plot of thousands of dots stays small and fast to draw. Every text
// that goes into the SVG is escaped here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::report {

/// `text` with &, <, >, " and ' replaced by entities: safe inside an element
/// and inside a double- or single-quoted attribute.
std::string escape_html(std::string_view text);

/// A number with `digits` significant digits, without exponent for the
/// magnitudes a report shows ("12.3", "0.0456", "1.2e+07" beyond).
std::string format_number(double value, int digits = 3);

/// One point of a plot, in data units.
struct Point {
  double x = 0, y = 0;
};

/// One plot: fixed pixel size, axes fitted to what is added (from 0 on both
/// axes unless a range is set), drawn by svg().
class Plot {
 public:
  /// A plot of `width` x `height` pixels with the axis titles given (plain text).
  Plot(int width, int height, std::string x_title, std::string y_title);

  /// Dots of one series, drawn in `color` (a CSS color); `name` goes in the legend.
  void add_dots(const std::vector<Point>& points, const std::string& color, const std::string& name);
  /// A step line through `points` (sorted by x): horizontal to the next x, then vertical.
  /// It extends to the x axis' end. `name` goes in the legend.
  void add_steps(const std::vector<Point>& points, const std::string& color, const std::string& name);
  /// A dashed horizontal line at `y`, labelled `name` in the legend.
  void add_hline(double y, const std::string& color, const std::string& name);
  /// Marks along the bottom edge at the x positions given (errors), as small
  /// crosses in `color`.
  void add_marks(const std::vector<double>& xs, const std::string& color, const std::string& name);
  /// Forces the x axis to end at least at `x` (e.g. the number of trials).
  void extend_x(double x);
  /// A logarithmic y axis over the decades the data spans (for values that
  /// fall by orders of magnitude, like a model's latency from untuned to tuned).
  /// Values <= 0 are left out.
  void set_log_y() { log_y_ = true; }

  /// The <svg> element, with a <title> naming the plot for screen readers.
  std::string svg(const std::string& title) const;

 private:
  void note_y(double y);
  struct Layer {
    enum Kind { kDots, kSteps, kHline, kMarks } kind;
    std::vector<Point> points;
    std::string color, name;
  };
  int width_, height_;
  std::string x_title_, y_title_;
  double x_max_ = 0, y_max_ = 0;
  double y_min_positive_ = 0;  // the smallest y > 0 added, for a log axis
  bool log_y_ = false;
  std::vector<Layer> layers_;
};

}  // namespace tessera::report
