#pragma once
// The checks of a problem's outputs (PROBLEM-ABI.md, "Problems of the library"), on the host, as
// plain C++ so that CI holds them to the library's CPU references and checks without a GPU:
// each output's check from the spec (tolerance, exact, topk), the do-nothing outputs of the
// gate-strength test, and an output's bytes decoded with its poison counted.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "metrics.hpp"
#include "problem_spec.hpp"

namespace kfleet::harness {

// A value as dtype `t` holds it (what a perfect kernel writes).
double round_to_dtype(kfleet_dtype t, double x);

// n elements of dtype `t` as values. *unwritten (if given) counts the poison left (every byte
// 0xFF): a NaN pattern for floats; -1 for integers, counted only where `ref` does not hold -1.
std::vector<double> decode_output(kfleet_dtype t, const std::vector<std::uint8_t>& raw, std::size_t n,
                                  const std::vector<double>* ref, std::size_t* unwritten);

// Per slot, the input values a check or a do-nothing output reads (topk's `of`, a lazy copy);
// empty for the others.
using SpecInputs = std::vector<std::vector<double>>;
// The slots whose values problem_output_check and problem_lazy_output read.
std::vector<int> slots_checks_read(const ProblemSpec& spec);

struct OutputCheck {
  std::string reason;  // "" when the output passes; else "output y (tolerance check): ..."
  Metrics m;
  std::size_t violations = 0;
  bool reference_fault = false;  // the reference itself is unusable (a harness fault)
};

// Output k of `spec` (values `act`) against the reference `ref` for case `c`.
OutputCheck problem_output_check(const ProblemSpec& spec, const SpecCase& c, std::size_t k,
                                 const std::vector<double>& act, const std::vector<double>& ref,
                                 const SpecInputs& inputs);

// What a do-nothing kernel would leave in output k (zeros, the reference's mean, a copy of an
// input, iota per row), as the output's dtype holds it.
std::vector<double> problem_lazy_output(const ProblemSpec& spec, const SpecCase& c, std::size_t k,
                                        const SpecLazy& lazy, const std::vector<double>& ref,
                                        const SpecInputs& inputs);
std::string lazy_name(const ProblemSpec& spec, const SpecLazy& lazy);  // "zeros", "copy of x"

}  // namespace kfleet::harness
