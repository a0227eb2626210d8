#pragma once
// SHA-256 (FIPS 180-4), so that bundles are content-addressed without an OpenSSL dependency.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kfleet {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<std::uint8_t, 32> digest();  // finishes; the object must not be updated after
  std::string hex_digest();

 private:
  void block(const std::uint8_t* p);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_{};
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace kfleet
