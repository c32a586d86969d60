// A plain HTTP/1.1 client for the tests that scrape stallscope's /metrics endpoint.
#ifndef STALLSCOPE_TESTS_HTTP_GET_H_
#define STALLSCOPE_TESTS_HTTP_GET_H_

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <string>

namespace stallscope::testing {

// Sends `request` raw and returns the whole response (the server closes after it, since
// requests here say Connection: close or are bad).
inline std::string Exchange(unsigned short port, const std::string& request) {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  asio::write(socket, asio::buffer(request));
  std::string response;
  boost::system::error_code ec;
  std::array<char, 8192> buf;
  while (true) {
    const size_t n = socket.read_some(asio::buffer(buf), ec);
    response.append(buf.data(), n);
    if (ec) break;
  }
  return response;
}

inline std::string Get(unsigned short port, const std::string& path) {
  return Exchange(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
}

}  // namespace stallscope::testing

#endif  // STALLSCOPE_TESTS_HTTP_GET_H_
