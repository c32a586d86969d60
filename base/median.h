// The median of a few measurements (repeated runs of one configuration).
//
// Thread-safety: a pure function.
#ifndef STALLSCOPE_BASE_MEDIAN_H_
#define STALLSCOPE_BASE_MEDIAN_H_

#include <algorithm>
#include <vector>

namespace stallscope {

// The middle value; of an even count, the mean of the two middle ones; 0 for none.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace stallscope

#endif  // STALLSCOPE_BASE_MEDIAN_H_
