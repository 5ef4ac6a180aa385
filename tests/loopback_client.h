// tests/loopback_client.h
// -----------------------------------------------------------------------------
// The client side of the echo server's tests (echo_server_test,
// echo_idle_test): a socket connected to 127.0.0.1, non-blocking.

#ifndef TICKWHEEL_TESTS_LOOPBACK_CLIENT_H_
#define TICKWHEEL_TESTS_LOOPBACK_CLIENT_H_

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace tickwheel::testing {

// A non-blocking socket connected to 127.0.0.1:`port`, or -1. A non-zero
// `rcvbuf` is set as SO_RCVBUF before connecting (which turns off the
// kernel's receive-buffer autotuning for it).
inline int ConnectLoopback(uint16_t port, int rcvbuf = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (rcvbuf > 0 &&
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) != 0) {
    close(fd);
    return -1;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

}  // namespace tickwheel::testing

#endif  // TICKWHEEL_TESTS_LOOPBACK_CLIENT_H_
