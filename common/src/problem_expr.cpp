// DimExpr: the integer expressions of problem.yaml (shapes, workspace, flops, bytes). A small
// recursive-descent parser; every value is int64 and overflow is an error, not a wrap.
#include <cctype>
#include <algorithm>

#include "kfleet/common/problem.hpp"

namespace kfleet {

struct DimExpr::Node {
  char op = 0;  // 'n' number, 'v' name, '+', '-', '*', '/', '%', 'u' unary minus, 'c' cdiv, 'm' min, 'M' max
  std::int64_t number = 0;
  std::string name;
  std::shared_ptr<const Node> a, b;
};

namespace {

using NodeP = std::shared_ptr<const DimExpr::Node>;

class ExprParser {
 public:
  ExprParser(const std::string& s, const std::vector<std::string>& names) : s_(s), names_(names) {}

  NodeP parse(std::string* error) {
    NodeP n = sum();
    skip();
    if (!err_.empty()) {
      *error = err_;
      return nullptr;
    }
    if (i_ != s_.size()) {
      *error = "unexpected '" + std::string(1, s_[i_]) + "' at column " + std::to_string(i_ + 1) +
               " of '" + s_ + "'";
      return nullptr;
    }
    return n;
  }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  NodeP fail(const std::string& why) {
    if (err_.empty()) err_ = why;
    return std::make_shared<DimExpr::Node>();
  }
  static NodeP bin(char op, NodeP a, NodeP b) {
    auto n = std::make_shared<DimExpr::Node>();
    n->op = op;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }
  NodeP sum() {
    NodeP n = product();
    for (;;) {
      if (eat('+')) n = bin('+', n, product());
      else if (eat('-')) n = bin('-', n, product());
      else return n;
    }
  }
  NodeP product() {
    NodeP n = unary();
    for (;;) {
      if (eat('*')) n = bin('*', n, unary());
      else if (eat('/')) n = bin('/', n, unary());
      else if (eat('%')) n = bin('%', n, unary());
      else return n;
    }
  }
  NodeP unary() {
    if (eat('-')) return bin('u', unary(), nullptr);
    return atom();
  }
  NodeP atom() {
    skip();
    if (i_ >= s_.size()) return fail("'" + s_ + "' ends where a value was expected");
    const char c = s_[i_];
    if (eat('(')) {
      NodeP n = sum();
      if (!eat(')')) return fail("expected ')' at column " + std::to_string(i_ + 1) + " of '" + s_ + "'");
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      auto n = std::make_shared<DimExpr::Node>();
      n->op = 'n';
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        if (__builtin_mul_overflow(n->number, 10, &n->number) ||
            __builtin_add_overflow(n->number, s_[i_] - '0', &n->number))
          return fail("number too large in '" + s_ + "'");
        ++i_;
      }
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::string word;
      while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
        word += s_[i_++];
      for (const auto& [fname, op] : {std::pair<const char*, char>{"cdiv", 'c'}, {"min", 'm'}, {"max", 'M'}}) {
        if (word != fname) continue;
        if (!eat('(')) return fail(word + " needs (a, b) in '" + s_ + "'");
        NodeP a = sum();
        if (!eat(',')) return fail(word + " needs two arguments in '" + s_ + "'");
        NodeP b = sum();
        if (!eat(')')) return fail("expected ')' after " + word + "'s arguments in '" + s_ + "'");
        return bin(op, a, b);
      }
      if (std::find(names_.begin(), names_.end(), word) == names_.end()) {
        std::string known;
        for (const auto& n : names_) known += (known.empty() ? "" : ", ") + n;
        return fail("unknown name '" + word + "' in '" + s_ + "' (dims: " +
                    (known.empty() ? "none" : known) + ")");
      }
      auto n = std::make_shared<DimExpr::Node>();
      n->op = 'v';
      n->name = word;
      return n;
    }
    return fail("unexpected '" + std::string(1, c) + "' at column " + std::to_string(i_ + 1) +
                " of '" + s_ + "'");
  }

  const std::string& s_;
  const std::vector<std::string>& names_;
  std::size_t i_ = 0;
  std::string err_;
};

Result<std::int64_t> eval_node(const DimExpr::Node& n, const std::map<std::string, std::int64_t>& dims,
                               const std::string& text) {
  auto bad = [&](const std::string& why) {
    return make_error(Errc::invalid_argument, "'" + text + "': " + why);
  };
  if (n.op == 'n') return n.number;
  if (n.op == 'v') {
    auto it = dims.find(n.name);
    if (it == dims.end()) return bad("no value for " + n.name);
    return it->second;
  }
  auto a = eval_node(*n.a, dims, text);
  if (!a) return a.error();
  if (n.op == 'u') return -*a;
  auto b = eval_node(*n.b, dims, text);
  if (!b) return b.error();
  std::int64_t r = 0;
  switch (n.op) {
    case '+': if (__builtin_add_overflow(*a, *b, &r)) return bad("overflow"); return r;
    case '-': if (__builtin_sub_overflow(*a, *b, &r)) return bad("overflow"); return r;
    case '*': if (__builtin_mul_overflow(*a, *b, &r)) return bad("overflow"); return r;
    case 'm': return std::min(*a, *b);
    case 'M': return std::max(*a, *b);
    default: break;
  }
  if (*b == 0) return bad("division by zero");
  const std::int64_t q = *a / *b, m = *a % *b;
  const bool neg = (m != 0) && ((m < 0) != (*b < 0));
  if (n.op == '%') return neg ? m + *b : m;
  if (n.op == '/') return neg ? q - 1 : q;
  return (m != 0 && !neg) ? q + 1 : q;  // cdiv: the ceiling
}

}  // namespace

std::optional<DimExpr> DimExpr::parse(const std::string& text, const std::vector<std::string>& names,
                                      std::string* error) {
  ExprParser p(text, names);
  NodeP root = p.parse(error);
  if (!root) return std::nullopt;
  DimExpr e;
  e.text_ = text;
  e.root_ = std::move(root);
  return e;
}

Result<std::int64_t> DimExpr::eval(const std::map<std::string, std::int64_t>& dims) const {
  if (!root_) return make_error(Errc::invalid_argument, "empty expression");
  return eval_node(*root_, dims, text_);
}

}  // namespace kfleet
