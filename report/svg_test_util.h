// Reading the report's SVG back in tests (chart_test.cc, html_report_test.cc): bars and tick
// labels by their class, with their positions in pixels.
//
// Thread-safety: pure functions.
#ifndef STALLSCOPE_REPORT_SVG_TEST_UTIL_H_
#define STALLSCOPE_REPORT_SVG_TEST_UTIL_H_

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

namespace stallscope::svg_test {

// The value of attribute `name` in `tag` ("" when absent).
inline std::string Attribute(const std::string& tag, const std::string& name) {
  std::smatch m;
  const std::regex re("\\s" + name + "=\"([^\"]*)\"");
  return std::regex_search(tag, m, re) ? m[1].str() : "";
}

struct Bar {
  double x, y, width, height;
};

// The <rect class="`cls`"> filled with `color`, left to right.
inline std::vector<Bar> Bars(const std::string& svg, const std::string& cls,
                             const std::string& color) {
  std::vector<Bar> out;
  const std::regex rect("<rect class=\"" + cls + "\"[^>]*>");
  for (std::sregex_iterator it(svg.begin(), svg.end(), rect), end; it != end; ++it) {
    const std::string tag = it->str();
    if (Attribute(tag, "fill") != color) continue;
    out.push_back({std::stod(Attribute(tag, "x")), std::stod(Attribute(tag, "y")),
                   std::stod(Attribute(tag, "width")), std::stod(Attribute(tag, "height"))});
  }
  std::sort(out.begin(), out.end(), [](const Bar& a, const Bar& b) { return a.x < b.x; });
  return out;
}

struct Label {
  double x, y;
  std::string text;
};

// The <text class="`cls`"> (x-tick, y-tick), in the order written.
inline std::vector<Label> Labels(const std::string& svg, const std::string& cls) {
  std::vector<Label> out;
  const std::regex text("(<text class=\"" + cls + "\"[^>]*>)([^<]*)</text>");
  for (std::sregex_iterator it(svg.begin(), svg.end(), text), end; it != end; ++it) {
    const std::string tag = (*it)[1].str();
    out.push_back({std::stod(Attribute(tag, "x")), std::stod(Attribute(tag, "y")), (*it)[2]});
  }
  return out;
}

inline std::vector<std::string> Texts(const std::vector<Label>& labels) {
  std::vector<std::string> out;
  for (const Label& l : labels) out.push_back(l.text);
  return out;
}

}  // namespace stallscope::svg_test

#endif  // STALLSCOPE_REPORT_SVG_TEST_UTIL_H_
