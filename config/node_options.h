// NodeOptions (`cluster.node`): one client node of a simulated cluster — its cores, what the
// pipeline's CPU work costs on one of them, its NIC, its host-to-device copy rate per GPU and
// the memory its RAM cache tiers may use. The simulator charges every node of the cluster at
// these rates; nothing of the host it runs on enters a simulation unless a profile says so
// (`stallscope calibrate` writes one; `cluster.node.profile` or `--node-profile` reads it).
//
// Every rate is in bytes per second of the work's input (per core where it says so); the
// defaults describe a typical training node and are documented in scenarios/README.md.
//
// Thread-safety: a plain value.
#ifndef STALLSCOPE_CONFIG_NODE_OPTIONS_H_
#define STALLSCOPE_CONFIG_NODE_OPTIONS_H_

#include <array>
#include <cstdint>
#include <string>

namespace stallscope {

struct NodeOptions {
  uint32_t cores = 32;  // preprocessing cores (the workers of all the node's ranks share them)
  // Per core, bytes per second of the work's input:
  double normalize = 2e9;      // normalize: bytes → float32, written into a batch's staging
  double verify = 3e9;         // run.verify: checking a sample's content
  double jpeg_decode = 100e6;  // jpeg-decode: compressed bytes decoded, cropped, normalized
  // jpeg-decode with normalize_on: device: decoded and cropped to uint8 pixels (about a fifth
  // less work than jpeg_decode on the hosts measured; `calibrate` measures it). Unmeasured, it
  // is jpeg_decode's rate: by default, and where a profile or scenario gives jpeg_decode
  // without it.
  double jpeg_decode_device = 100e6;
  double receive = 3e9;  // landing a storage read's bytes (the completion thread)
  double memcpy = 10e9;  // a RAM-tier hit's copy (one sample)
  double fill = 5e9;     // copying into fresh pages: a RAM tier admitting a sample
  // One copy far larger than the caches, memory to memory: the emulated device's copy of a
  // batch, and its snapshot of its state for an async checkpoint. `memcpy` is measured on one
  // sample (cache-resident); a batch or a 128 MiB snapshot runs at the memory's speed, 2-5x
  // slower on the hosts measured.
  double snapshot = 10e9;
  // How long one second of loader.preprocess.cost takes on one core, alone and with every
  // core busy (virtual cores sharing a physical one run slower together).
  double cost_factor = 1, cost_factor_busy = 1;
  double nic = 25e9;    // bytes/s into the node from the storage (200 Gb/s)
  double h2d = 52.3e9;  // bytes/s host → device per GPU (gpu.device cuda; the H200, docs/gpu)
  uint64_t memory = 1ULL << 40;  // bytes the node's RAM cache tiers may hold together
  // Where these values came from: "scenario" (defaults and cluster.node's keys), "profile
  // FILE, DATE", or "measured on this host, DATE".
  std::string source = "scenario";

  bool operator==(const NodeOptions&) const = default;
};

// The rates by their scenario key, for the parser, `calibrate` and messages.
struct NodeRate {
  const char* key;
  double NodeOptions::*field;
  const char* what;
  bool factor = false;    // a plain number (cost_factor*), not a rate in bytes per second
  bool optional = false;  // a profile may lack it (added after profiles were first written)
};
inline constexpr std::array<NodeRate, 12> kNodeRates = {{
    {"normalize", &NodeOptions::normalize, "bytes → float32 per core"},
    {"verify", &NodeOptions::verify, "content verification per core"},
    {"jpeg_decode", &NodeOptions::jpeg_decode, "JPEG decode + crop + normalize per core"},
    {"jpeg_decode_device", &NodeOptions::jpeg_decode_device,
     "JPEG decode + crop per core, normalized on the device", false, true},
    {"receive", &NodeOptions::receive, "landing received bytes per core"},
    {"memcpy", &NodeOptions::memcpy, "memcpy of a sample (RAM-tier hit)"},
    {"fill", &NodeOptions::fill, "memcpy into fresh pages (RAM-tier admit)"},
    {"snapshot", &NodeOptions::snapshot, "one large memcpy (emulated copy, snapshot)", false, true},
    {"nic", &NodeOptions::nic, "storage bytes into the node"},
    {"h2d", &NodeOptions::h2d, "host to device per GPU"},
    {"cost_factor", &NodeOptions::cost_factor, "seconds per second of preprocess.cost", true},
    {"cost_factor_busy", &NodeOptions::cost_factor_busy, "the same, every core busy", true},
}};
inline bool IsFactor(const NodeRate& r) { return r.factor; }

}  // namespace stallscope

#endif  // STALLSCOPE_CONFIG_NODE_OPTIONS_H_
