#pragma once
// The fake servers' socket: listening on 127.0.0.1 at a port the kernel picks (read it back from
// the acceptor's local_endpoint()).
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/socket_base.hpp>

namespace kfleet::testing {

inline void listen_on_loopback(boost::asio::ip::tcp::acceptor& acceptor) {
  const boost::asio::ip::tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"), 0);
  acceptor.open(ep.protocol());
  acceptor.set_option(boost::asio::socket_base::reuse_address(true));
  acceptor.bind(ep);
  acceptor.listen();
}

}  // namespace kfleet::testing
