// This process's I/O to the block device under a path, throttled by a cgroup made for it (you
// are root): reads to bytes or reads per second, or writes to bytes per second. cgroup v2's
// io.max (rbps=, riops=, wbps=) where the host's unified hierarchy has the io controller, else
// cgroup v1's blkio.throttle.read_bps_device, read_iops_device or write_bps_device (v1
// throttles only O_DIRECT writes: buffered ones reach the disk from the kernel's writeback).
// On destruction the process goes back to its own cgroup and the new one is removed. ok()
// false, with why(), where the host offers neither (a container without either controller, a
// path on no block device).
#ifndef STALLSCOPE_TESTS_IO_THROTTLE_H_
#define STALLSCOPE_TESTS_IO_THROTTLE_H_

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace stallscope::testing {

class IoThrottle {
 public:
  enum Unit { kBytes, kReads, kWriteBytes };  // what the limit counts, per second
  IoThrottle(const std::string& path, uint64_t per_second, Unit unit = kBytes) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || major(st.st_dev) == 0) {
      why_ = path + " is not on a block device";
      return;
    }
    unsigned maj = major(st.st_dev), min = minor(st.st_dev);
    const std::string sys = fmt::format("/sys/dev/block/{}:{}", maj, min);
    if (std::filesystem::exists(sys + "/partition")) {  // a partition: its disk's queue
      std::ifstream disk(sys + "/../dev");
      char colon = 0;
      disk >> maj >> colon >> min;
    }
    const std::string device = fmt::format("{}:{}", maj, min);
    const std::string v2 = Mount("cgroup2");
    std::string v2_why;
    if (!v2.empty() && Controllers(v2 + "/cgroup.controllers").find(" io ") != std::string::npos) {
      const char* key = unit == kBytes ? "rbps" : unit == kReads ? "riops" : "wbps";
      if (Make(v2, "", "/io.max", fmt::format("{} {}={}", device, key, per_second))) {
        kind_ = "cgroup v2 io.max";
        return;
      }
      v2_why = why_ + "; ";
    } else {
      v2_why = v2.empty() ? "no cgroup v2 here; " : "no io controller in cgroup v2 (" + v2 + "); ";
    }
    const std::string v1 = "/sys/fs/cgroup/blkio";
    if (!std::filesystem::exists(v1 + "/blkio.throttle.read_bps_device")) {
      why_ = v2_why + "no cgroup v1 blkio controller here";
      return;
    }
    const std::string v1_file = unit == kBytes   ? "/blkio.throttle.read_bps_device"
                                : unit == kReads ? "/blkio.throttle.read_iops_device"
                                                 : "/blkio.throttle.write_bps_device";
    if (Make(v1, "blkio", v1_file, fmt::format("{} {}", device, per_second))) {
      kind_ = "cgroup v1 blkio";
      return;
    }
    why_ = v2_why + why_;
  }
  ~IoThrottle() {
    if (group_.empty()) return;
    if (!Put(home_ + "/cgroup.procs", std::to_string(getpid())) || rmdir(group_.c_str()) != 0) {
      ADD_FAILURE() << "could not leave and remove " << group_
                    << ": this process's disk I/O may stay throttled";
    }
  }
  IoThrottle(const IoThrottle&) = delete;
  IoThrottle& operator=(const IoThrottle&) = delete;
  bool ok() const { return !group_.empty(); }
  const std::string& why() const { return why_; }
  const std::string& kind() const { return kind_; }  // which mechanism throttles

 private:
  static bool Put(const std::string& file, const std::string& text) {
    std::ofstream f(file);
    f << text << std::flush;
    return static_cast<bool>(f);
  }
  // " a b c " for a file of "a b c".
  static std::string Controllers(const std::string& file) {
    std::ifstream in(file);
    std::string all = " ";
    for (std::string word; in >> word;) all += word + " ";
    return all;
  }
  // Where a filesystem of `type` is mounted ("" if nowhere).
  static std::string Mount(const std::string& type) {
    std::ifstream mounts("/proc/self/mounts");
    for (std::string dev, dir, t, rest; mounts >> dev >> dir >> t && std::getline(mounts, rest);) {
      if (t == type) return dir;
    }
    return "";
  }
  // This process's cgroup in the hierarchy of `controller` ("" = the unified one), from
  // /proc/self/cgroup, under `root`.
  static std::string Home(const std::string& root, const std::string& controller) {
    std::ifstream self("/proc/self/cgroup");
    for (std::string line; std::getline(self, line);) {
      const size_t a = line.find(':'), b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      const std::string names = line.substr(a + 1, b - a - 1);
      if (controller.empty() ? line.substr(0, a) == "0" && names.empty() : names == controller) {
        return root + line.substr(b + 1);
      }
    }
    return "";
  }
  // A group for this process under `root`, its limit written to `file`, the process moved in.
  // cgroup v2 gives a child the io controller only through its parent's subtree_control,
  // which a non-root group with processes in it refuses (the "no internal processes" rule):
  // the group is made under the hierarchy's root, which is exempt.
  bool Make(const std::string& root, const std::string& controller, const std::string& file,
            const std::string& limit) {
    home_ = Home(root, controller);
    if (home_.empty()) {
      why_ = "this process has no cgroup under " + root;
      return false;
    }
    std::error_code ec;
    // Groups an earlier run left (killed before its destructor): removed when empty.
    for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
      if (e.path().filename().string().starts_with("stallscope-throttle-")) rmdir(e.path().c_str());
    }
    if (controller.empty() &&
        Controllers(root + "/cgroup.subtree_control").find(" io ") == std::string::npos) {
      if (!Put(root + "/cgroup.subtree_control", "+io")) {
        why_ = "cannot enable the io controller in " + root + "/cgroup.subtree_control";
        return false;
      }
    }
    group_ = fmt::format("{}/stallscope-throttle-{}", root, getpid());
    std::filesystem::create_directory(group_, ec);
    if (ec || !Put(group_ + file, limit) ||
        !Put(group_ + "/cgroup.procs", std::to_string(getpid()))) {
      why_ = "cannot make a throttled cgroup in " + root + " (root needed)";
      Put(home_ + "/cgroup.procs", std::to_string(getpid()));
      rmdir(group_.c_str());
      group_.clear();
      return false;
    }
    return true;
  }

  std::string home_, group_, why_, kind_;
};

}  // namespace stallscope::testing

#endif  // STALLSCOPE_TESTS_IO_THROTTLE_H_
