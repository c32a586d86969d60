// Alignment: the block size of direct I/O and of disk-space accounting, and rounding to it.
//
// Thread-safety: constants and pure functions.
#ifndef STALLSCOPE_BASE_ALIGN_H_
#define STALLSCOPE_BASE_ALIGN_H_

#include <cstdint>

namespace stallscope {

// O_DIRECT's alignment (buffer address, offset and length) on the filesystems stallscope
// reads, and the unit in which the disk tier (and the simulator's model of it) charges an
// entry against its capacity.
constexpr uint64_t kBlockBytes = 4096;

// `n` rounded up to a multiple of `to`. REQUIRES: to > 0.
constexpr uint64_t RoundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

}  // namespace stallscope

#endif  // STALLSCOPE_BASE_ALIGN_H_
