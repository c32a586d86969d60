// MetricsServer: serves GET /metrics over HTTP/1.1 on one Boost.Asio thread (Beast).
//
// Binds only where told: "HOST:PORT", or a bare "PORT" meaning 127.0.0.1:PORT (port 0 picks a
// free one; port() says which). Every request is answered from `body()` at the time of the
// request, so a scrape sees live values. Unknown paths get 404, other methods 405, malformed
// requests and clients that stall for more than 10 s are disconnected; none of it touches
// the run. (prometheus-cpp's civetweb Exposer cannot start threads once cuBLAS is linked —
// DESIGN.md — hence Beast.)
//
// Thread-safety: construct and destroy from one thread; body() is called on the server's
// thread.
#ifndef STALLSCOPE_METRICS_METRICS_SERVER_H_
#define STALLSCOPE_METRICS_METRICS_SERVER_H_

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace stallscope {

class MetricsServer {
 public:
  // Throws std::invalid_argument for an address that cannot be parsed or bound.
  // `port_offset` is added to a non-zero port (multi-rank runs: rank k of a host serves at
  // PORT + k).
  MetricsServer(const std::string& listen, std::function<std::string()> body,
                unsigned port_offset = 0);
  ~MetricsServer();

  unsigned short port() const;
  std::string address() const;  // "127.0.0.1:9464"

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stallscope

#endif  // STALLSCOPE_METRICS_METRICS_SERVER_H_
