#include "report/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tessera::report {
namespace {

constexpr int kLeft = 64, kRight = 16, kTop = 12, kBottom = 58;  // room for ticks, titles, legend

// A tick step of 1, 2 or 5 times a power of ten giving about five ticks.
double tick_step(double range) {
  if (!(range > 0)) return 1;
  const double rough = range / 5;
  const double power = std::pow(10.0, std::floor(std::log10(rough)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= rough) return m * power;
  return 10 * power;
}

// The axis end: the data's maximum rounded up to a whole tick.
double axis_end(double max) {
  if (!(max > 0) || !std::isfinite(max)) return 1;
  const double step = tick_step(max);
  return std::ceil(max / step - 1e-9) * step;
}

// A tick's label: as short as the value allows ("0", "50", "0.5", "1e+04").
std::string tick_label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", std::fabs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string format_number(double value, int digits) {
  if (!std::isfinite(value)) return "-";
  char buf[48];
  const double magnitude = std::fabs(value);
  if (magnitude != 0 && (magnitude >= 1e7 || magnitude < 1e-4)) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, value);
  } else {
    // %g's significant digits without its exponent: decimals from the magnitude.
    const int whole = magnitude >= 1 ? static_cast<int>(std::floor(std::log10(magnitude))) + 1 : 0;
    int decimals = std::max(0, digits - whole);
    if (magnitude > 0 && magnitude < 1) decimals = digits - 1 - static_cast<int>(std::floor(std::log10(magnitude)));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  }
  return buf;
}

Plot::Plot(int width, int height, std::string x_title, std::string y_title)
    : width_(width), height_(height), x_title_(std::move(x_title)), y_title_(std::move(y_title)) {}

void Plot::add_dots(const std::vector<Point>& points, const std::string& color, const std::string& name) {
  for (const Point& p : points) {
    x_max_ = std::max(x_max_, p.x);
    y_max_ = std::max(y_max_, p.y);
    note_y(p.y);
  }
  layers_.push_back({Layer::kDots, points, color, name});
}

void Plot::add_steps(const std::vector<Point>& points, const std::string& color, const std::string& name) {
  for (const Point& p : points) {
    x_max_ = std::max(x_max_, p.x);
    y_max_ = std::max(y_max_, p.y);
    note_y(p.y);
  }
  layers_.push_back({Layer::kSteps, points, color, name});
}

void Plot::add_hline(double y, const std::string& color, const std::string& name) {
  y_max_ = std::max(y_max_, y);
  note_y(y);
  layers_.push_back({Layer::kHline, {{0, y}}, color, name});
}

void Plot::add_marks(const std::vector<double>& xs, const std::string& color, const std::string& name) {
  std::vector<Point> points;
  points.reserve(xs.size());
  for (double x : xs) {
    x_max_ = std::max(x_max_, x);
    points.push_back({x, 0});
  }
  layers_.push_back({Layer::kMarks, std::move(points), color, name});
}

void Plot::extend_x(double x) {
  x_max_ = std::max(x_max_, x);
}

void Plot::note_y(double y) {
  if (y > 0 && (y_min_positive_ == 0 || y < y_min_positive_)) y_min_positive_ = y;
}

std::string Plot::svg(const std::string& title) const {
  const double x_end = axis_end(x_max_), y_end = axis_end(y_max_ * 1.05);
  const double plot_w = width_ - kLeft - kRight, plot_h = height_ - kTop - kBottom;
  // A log axis spans whole decades around the data.
  const bool log_y = log_y_ && y_min_positive_ > 0;
  const double lo = log_y ? std::floor(std::log10(y_min_positive_)) : 0;
  const double hi = log_y ? std::max(lo + 1, std::ceil(std::log10(y_max_))) : 0;
  auto sx = [&](double x) { return kLeft + x / x_end * plot_w; };
  auto sy = [&](double y) {
    if (log_y) return kTop + plot_h - (std::max(std::log10(std::max(y, 1e-300)), lo) - lo) / (hi - lo) * plot_h;
    return kTop + plot_h - y / y_end * plot_h;
  };
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"" + std::to_string(width_) +
                    "\" height=\"" + std::to_string(height_) + "\" viewBox=\"0 0 " + std::to_string(width_) + " " +
                    std::to_string(height_) + "\" font-family=\"sans-serif\" font-size=\"11\">";
  out += "<title>" + escape_html(title) + "</title>";
  out += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(width_) + "\" height=\"" + std::to_string(height_) +
         "\" fill=\"#fff\"/>";
  // Grid and ticks.
  const double xs = tick_step(x_end), ys = tick_step(y_end);
  for (double x = 0; x <= x_end * (1 + 1e-9); x += xs)
    out += "<line x1=\"" + px(sx(x)) + "\" y1=\"" + px(kTop) + "\" x2=\"" + px(sx(x)) + "\" y2=\"" + px(kTop + plot_h) +
           "\" stroke=\"#eee\"/><text x=\"" + px(sx(x)) + "\" y=\"" + px(kTop + plot_h + 14) +
           "\" text-anchor=\"middle\">" + tick_label(x) + "</text>";
  std::vector<double> y_ticks;
  if (log_y) {
    for (double e = lo; e <= hi; ++e)
      for (double m : {1.0, 2.0, 5.0})
        if (e + std::log10(m) <= hi + 1e-9 && (m == 1 || hi - lo <= 3)) y_ticks.push_back(m * std::pow(10.0, e));
  } else {
    for (double y = 0; y <= y_end * (1 + 1e-9); y += ys) y_ticks.push_back(y);
  }
  for (double y : y_ticks)
    out += "<line x1=\"" + px(kLeft) + "\" y1=\"" + px(sy(y)) + "\" x2=\"" + px(kLeft + plot_w) + "\" y2=\"" +
           px(sy(y)) + "\" stroke=\"#eee\"/><text x=\"" + px(kLeft - 4) + "\" y=\"" + px(sy(y) + 4) +
           "\" text-anchor=\"end\">" + tick_label(y) + "</text>";
  out += "<rect x=\"" + px(kLeft) + "\" y=\"" + px(kTop) + "\" width=\"" + px(plot_w) + "\" height=\"" + px(plot_h) +
         "\" fill=\"none\" stroke=\"#888\"/>";
  out += "<text x=\"" + px(kLeft + plot_w / 2) + "\" y=\"" + px(kTop + plot_h + 30) + "\" text-anchor=\"middle\">" +
         escape_html(x_title_) + "</text>";
  out += "<text transform=\"translate(12," + px(kTop + plot_h / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         escape_html(y_title_ + (log_y ? " (log scale)" : "")) + "</text>";
  // Layers, each with its legend entry along the bottom.
  double legend_x = kLeft;
  const double legend_y = height_ - 8;
  for (const Layer& layer : layers_) {
    const std::string color = escape_html(layer.color);
    std::string d;
    switch (layer.kind) {
      case Layer::kDots:
        for (const Point& p : layer.points) d += "M" + px(sx(p.x)) + " " + px(sy(p.y)) + "h0";
        out += "<path class=\"dots\" d=\"" + d + "\" stroke=\"" + color +
               "\" stroke-width=\"5\" stroke-linecap=\"round\" stroke-opacity=\"0.6\" fill=\"none\"/>";
        break;
      case Layer::kSteps:
        for (size_t i = 0; i < layer.points.size(); ++i) {
          const Point& p = layer.points[i];
          if (i == 0)
            d += "M" + px(sx(p.x)) + " " + px(sy(p.y));
          else
            d += "H" + px(sx(p.x)) + "V" + px(sy(p.y));
        }
        if (!layer.points.empty()) d += "H" + px(sx(x_end));
        out += "<path class=\"steps\" d=\"" + d + "\" stroke=\"" + color + "\" stroke-width=\"2\" fill=\"none\"/>";
        break;
      case Layer::kHline:
        out += "<line class=\"hline\" x1=\"" + px(kLeft) + "\" y1=\"" + px(sy(layer.points[0].y)) + "\" x2=\"" +
               px(kLeft + plot_w) + "\" y2=\"" + px(sy(layer.points[0].y)) + "\" stroke=\"" + color +
               "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>";
        break;
      case Layer::kMarks:
        for (const Point& p : layer.points) d += "M" + px(sx(p.x) - 3) + " " + px(kTop + plot_h - 6) + "l6 6m0 -6l-6 6";
        out += "<path class=\"marks\" d=\"" + d + "\" stroke=\"" + color + "\" stroke-width=\"1.2\" fill=\"none\"/>";
        break;
    }
    out += "<rect x=\"" + px(legend_x) + "\" y=\"" + px(legend_y - 9) + "\" width=\"10\" height=\"10\" fill=\"" +
           color + "\"/><text x=\"" + px(legend_x + 14) + "\" y=\"" + px(legend_y) + "\">" + escape_html(layer.name) +
           "</text>";
    legend_x += 24 + 6.5 * static_cast<double>(layer.name.size());
  }
  return out + "</svg>";
}

}  // namespace tessera::report
