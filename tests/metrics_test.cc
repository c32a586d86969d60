// The metrics endpoint under abuse while a run goes: 1,000 scrapes back to back, 50 at once,
// malformed requests, unknown paths, a client that never finishes its request. The run's
// results must not change and nothing may crash; every good scrape is well-formed.
#include "metrics/metrics.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "metrics/metrics_server.h"
#include "tests/http_get.h"
#include "tests/test_util.h"

namespace stallscope {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using testing::Exchange;
using testing::Get;

const char* kScenario = R"(
name: abuse
dataset: {samples: 2048, sample_size: 8KiB}
storage: {kind: simulated, bandwidth: 8MB/s}
loader: {batch_size: 32, prefetch: 2, workers: 2}
gpu: {step_time: 5ms}
run: {epochs: 1}
)";

// A ~2 s storage-bound run, observed by `metrics` when given.
VariantResult RunWith(VariantMetrics* metrics) {
  const Scenario s = testing::ScenarioFromYaml(kScenario);
  auto storage = MakeStorage(s, true);
  EmulatedDevice device(s.gpu.step_time);
  RunHooks hooks{.quiet = true};
  hooks.observer = metrics;
  return RunVariant(s, *storage, device, hooks);
}

TEST(MetricsServer, SurvivesAbuseWithoutChangingTheRun) {
  MetricsHub hub;
  MetricsServer server("127.0.0.1:0", [&hub] { return hub.Serialize(); });
  const unsigned short port = server.port();
  auto metrics = std::make_shared<VariantMetrics>("abuse", "base", std::vector<std::string>{});
  hub.Add(metrics);

  std::atomic<bool> running{true};
  std::atomic<int> good{0}, bad{0};
  std::vector<std::thread> clients;
  // A slow client: opens a connection, sends half a request line, and waits.
  clients.emplace_back([&] {
    asio::io_context io;
    tcp::socket socket(io);
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
    asio::write(socket, asio::buffer(std::string("GET /metr")));
    while (running) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  // 1,000 scrapes back to back.
  std::atomic<int> back_to_back{0};
  clients.emplace_back([&] {
    for (int i = 0; i < 1000; ++i) {
      const std::string r = Get(port, "/metrics");
      const bool ok = r.find("200 OK") != std::string::npos &&
                      r.find("stallscope_steps_total") != std::string::npos;
      (ok ? good : bad)++;
      back_to_back += ok;
    }
  });
  // Bursts of 50 at once, with malformed requests and unknown paths mixed in.
  clients.emplace_back([&] {
    while (running) {
      std::vector<std::thread> burst;
      for (int i = 0; i < 50; ++i) {
        burst.emplace_back([&, i] {
          if (i % 10 == 0) {
            const std::string r = Get(port, "/nope");
            if (r.find("404") == std::string::npos) bad++;
          } else if (i % 10 == 1) {
            Exchange(port, "THIS IS NOT HTTP\r\n\r\n");  // dropped; must not hurt
          } else {
            const std::string r = Get(port, "/metrics");
            (r.find("200 OK") != std::string::npos ? good : bad)++;
          }
        });
      }
      for (auto& t : burst) t.join();
    }
  });
  const VariantResult abused = RunWith(metrics.get());
  running = false;
  for (auto& c : clients) c.join();

  EXPECT_EQ(back_to_back.load(), 1000);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(abused.samples_delivered, 2048u);
  EXPECT_EQ(abused.samples_verified, 2048u);
  EXPECT_EQ(abused.integrity_errors, 0u);
  // The endpoint still answers, and its final values are the run's.
  const std::string last = Get(port, "/metrics");
  EXPECT_NE(last.find("stallscope_samples_total{scenario=\"abuse\",variant=\"base\"} 2048"),
            std::string::npos)
      << last.substr(0, 2000);
  // And the same run without any of it measures the same (storage-bound, ±0.05).
  const VariantResult quiet = RunWith(nullptr);
  EXPECT_NEAR(abused.gpu_idle_fraction, quiet.gpu_idle_fraction, 0.05);
}

TEST(MetricsServer, BindsOnlyWhereTold) {
  MetricsServer server("0", [] { return std::string(); });  // bare port: loopback
  EXPECT_EQ(server.address().rfind("127.0.0.1:", 0), 0u) << server.address();
  EXPECT_THROW(MetricsServer("not-an-address:99", [] { return std::string(); }),
               std::invalid_argument);
  EXPECT_THROW(MetricsServer("127.0.0.1:99999", [] { return std::string(); }),
               std::invalid_argument);
}

}  // namespace
}  // namespace stallscope
