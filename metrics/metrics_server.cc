#include "metrics/metrics_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>
#include <thread>

#include "base/start_thread.h"

namespace stallscope {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kClientTimeout = std::chrono::seconds(10);  // a stalled client is dropped
constexpr size_t kMaxRequestBytes = 16 * 1024;             // a scrape request is tiny

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const std::function<std::string()>& body)
      : stream_(std::move(socket)), body_(body) {}

  void Start() { Read(); }

 private:
  void Read() {
    request_ = {};
    parser_.emplace();
    parser_->body_limit(kMaxRequestBytes);
    parser_->header_limit(kMaxRequestBytes);
    stream_.expires_after(kClientTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec) return Close();  // malformed, timed out, or closed: just drop the connection
    request_ = parser_->release();
    auto response = std::make_shared<http::response<http::string_body>>();
    response->version(request_.version());
    response->keep_alive(request_.keep_alive());
    response->set(http::field::server, "stallscope");
    const std::string target(request_.target());
    const std::string path = target.substr(0, target.find('?'));
    if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
      response->result(http::status::method_not_allowed);
      response->set(http::field::allow, "GET, HEAD");
      response->body() = "only GET /metrics\n";
      response->set(http::field::content_type, "text/plain");
    } else if (path != "/metrics") {
      response->result(http::status::not_found);
      response->body() = "not found: stallscope serves /metrics\n";
      response->set(http::field::content_type, "text/plain");
    } else {
      response->result(http::status::ok);
      response->set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      if (request_.method() == http::verb::get) response->body() = body_();
    }
    response->prepare_payload();
    stream_.expires_after(kClientTimeout);
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code ec, size_t) {
                        if (ec || !response->keep_alive()) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> request_;
  const std::function<std::string()>& body_;
};

}  // namespace

class MetricsServer::Impl {
 public:
  Impl(const std::string& listen, std::function<std::string()> body, unsigned port_offset)
      : body_(std::move(body)), acceptor_(context_) {
    std::string host = "127.0.0.1", port = listen;
    if (const auto colon = listen.rfind(':'); colon != std::string::npos) {
      host = listen.substr(0, colon);
      port = listen.substr(colon + 1);
      if (host.size() > 1 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);  // [::1]
      }
    }
    beast::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    unsigned long port_number = 0;
    try {
      size_t used = 0;
      port_number = std::stoul(port, &used);
      if (used != port.size() || port_number > 65535) throw std::invalid_argument(port);
    } catch (const std::exception&) {
      throw std::invalid_argument("--metrics-listen " + listen + ": expected HOST:PORT or PORT");
    }
    if (ec) throw std::invalid_argument("--metrics-listen " + listen + ": bad address " + host);
    if (port_number != 0) port_number += port_offset;
    if (port_number > 65535) {
      throw std::invalid_argument("--metrics-listen " + listen + ": port + local rank (" +
                                  std::to_string(port_offset) + ") is beyond 65535");
    }
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(port_number));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      throw std::invalid_argument("--metrics-listen " + listen +
                                  ": cannot listen: " + ec.message());
    }
    Accept();
    thread_ = StartThread("the metrics server's thread", [this] { context_.run(); });
  }

  ~Impl() {
    asio::post(context_, [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
    });
    context_.stop();
    thread_.join();
  }

  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  std::string address() const {
    const auto e = acceptor_.local_endpoint();
    return e.address().to_string() + ":" + std::to_string(e.port());
  }

 private:
  void Accept() {
    // One thread runs the context, so sessions need no strand.
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) std::make_shared<Session>(std::move(socket), body_)->Start();
      Accept();
    });
  }

  std::function<std::string()> body_;
  asio::io_context context_;
  tcp::acceptor acceptor_;
  std::thread thread_;
};

MetricsServer::MetricsServer(const std::string& listen, std::function<std::string()> body,
                             unsigned port_offset)
    : impl_(std::make_unique<Impl>(listen, std::move(body), port_offset)) {}

MetricsServer::~MetricsServer() = default;

unsigned short MetricsServer::port() const { return impl_->port(); }
std::string MetricsServer::address() const { return impl_->address(); }

}  // namespace stallscope
