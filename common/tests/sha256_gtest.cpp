#include "kfleet/common/sha256.hpp"

#include <gtest/gtest.h>

namespace kfleet {
namespace {

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, OneMillionAInPieces) {
  Sha256 h;
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) h.update(chunk);
  EXPECT_EQ(h.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, SplitUpdatesMatchOneShot) {
  // Boundaries around the 55/56/64-byte padding edges are where hand-written SHA goes wrong.
  for (std::size_t n : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
    const std::string msg(n, 'x');
    Sha256 h;
    h.update(msg.substr(0, n / 3));
    h.update(msg.substr(n / 3));
    EXPECT_EQ(h.hex_digest(), sha256_hex(msg)) << n;
  }
  EXPECT_NE(sha256_hex(std::string(55, 'x')), sha256_hex(std::string(56, 'x')));
}

}  // namespace
}  // namespace kfleet
