// How a statement's parameters travel (pg_db.hpp's Stmt::bind): numbers and text as text,
// with their types named so the server need not guess; bytes and arrays in PostgreSQL's binary
// formats.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "pg_db.hpp"

namespace kfleet::store::pg {

Stmt::Param& Stmt::slot(int i) {
  if (i < 1) throw DbError{"", "bind index " + std::to_string(i) + " out of range"};
  if (params_.size() < static_cast<std::size_t>(i)) params_.resize(static_cast<std::size_t>(i));
  return params_[static_cast<std::size_t>(i - 1)];
}

Stmt& Stmt::bind(int i, std::int64_t v) {
  auto& p = slot(i);
  p.value = std::to_string(v);
  p.type = kInt8;
  p.format = 0;
  p.null = false;
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  auto& p = slot(i);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  p.value = buf;
  p.type = kFloat8;
  p.format = 0;
  p.null = false;
  return *this;
}

Stmt& Stmt::bind(int i, std::string_view v) {
  auto& p = slot(i);
  p.value.assign(v.data(), v.size());
  p.type = kText;
  p.format = 0;
  p.null = false;
  return *this;
}

Stmt& Stmt::bind(int i, Blob v) {
  auto& p = slot(i);
  p.value.assign(v.bytes.data(), v.bytes.size());
  p.type = kBytea;
  p.format = 1;
  p.null = false;
  return *this;
}

namespace {

void put_be32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 4);
}

// The binary array format's header for one dimension of n elements of type elem, from 1.
void put_array_header(std::string& out, unsigned elem, std::size_t n) {
  put_be32(out, 1);  // dimensions
  put_be32(out, 0);  // flags: no NULL element
  put_be32(out, elem);
  put_be32(out, static_cast<std::uint32_t>(n));
  put_be32(out, 1);  // lower bound
}

}  // namespace

Stmt& Stmt::bind(int i, const Int8Array& v) {
  auto& p = slot(i);
  p.value.clear();
  p.value.reserve(20 + 12 * v.items.size());
  put_array_header(p.value, kInt8, v.items.size());
  for (std::int64_t x : v.items) {
    const auto u = static_cast<std::uint64_t>(x);
    put_be32(p.value, 8);
    put_be32(p.value, static_cast<std::uint32_t>(u >> 32));
    put_be32(p.value, static_cast<std::uint32_t>(u));
  }
  p.type = kInt8Array;
  p.format = 1;
  p.null = false;
  return *this;
}

Stmt& Stmt::bind(int i, const TextArray& v) {
  auto& p = slot(i);
  std::size_t bytes = 20;
  for (const auto& x : v.items) bytes += 4 + x.size();
  p.value.clear();
  p.value.reserve(bytes);
  put_array_header(p.value, kText, v.items.size());
  for (const auto& x : v.items) {
    put_be32(p.value, static_cast<std::uint32_t>(x.size()));
    p.value += x;
  }
  p.type = kTextArray;
  p.format = 1;
  p.null = false;
  return *this;
}

Stmt& Stmt::bind(int i, std::nullopt_t) {
  auto& p = slot(i);
  p.value.clear();
  p.type = kText;
  p.format = 0;
  p.null = true;
  return *this;
}

}  // namespace kfleet::store::pg
