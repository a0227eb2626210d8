// A problem of the library (--problem-spec; PROBLEM-ABI.md, PROTOCOL.md "Problems of the
// library"): the resolved spec kfleet wrote, one case of it, its tensors in the fixed arena in
// slot order (then the workspace), inputs drawn from the spec's distributions on the device,
// the library's GPU reference, and one check per output (tolerance, exact, topk). The kernel
// gets kfleet_problem_args, built by build_problem_args from the spec, so the recorder and the
// measuring process make the same bytes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>

#include "../cpu/numeric.hpp"
#include "../cpu/problem_checks.hpp"
#include "../cpu/problem_inputs.hpp"
#include "../cpu/problem_reference_check.hpp"
#include "../cpu/problem_spec.hpp"
#include "../cpu/python_plan.hpp"
#include "device_codec.hpp"
#include "harness.hpp"
#include "problem_draw.hpp"
#include "problem_reference.hpp"
#include "replay_mode.hpp"  // gpuMemcpyDeviceToDevice

namespace kfleet::harness {

ProblemReferenceFn find_problem_reference(const std::string& problem) {
  // An explicit table (each reference is kernels/problems/<name>/reference.cu).
  if (problem == "rmsnorm") return gpu_reference_rmsnorm;
  if (problem == "softmax") return gpu_reference_softmax;
  if (problem == "rope") return gpu_reference_rope;
  if (problem == "grouped_gemm") return gpu_reference_grouped_gemm;
  if (problem == "topk") return gpu_reference_topk;
  if (problem == "fp8_block_gemm") return gpu_reference_fp8_block_gemm;
  return nullptr;
}

namespace {

using namespace problem_draw;
using CheckResult = OutputCheck;

bool is_float(kfleet_dtype t) { return t == KFLEET_FP16 || t == KFLEET_BF16 || t == KFLEET_FP32; }

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[240];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

}  // namespace

// ---- The problem ----

class GenericProblem : public Problem {
 public:
  // `reference_only`: the problem of the GPU-vs-CPU reference check, which no kernel sees: its
  // buffers are the harness's own, outside the fixed arena, and it has no workspace.
  GenericProblem(const Options& o, const ProblemSpec& spec, const SpecCase& c, std::uint64_t seed,
                 bool reference_only = false)
      : spec_(spec), case_(c) {
    ref_ = find_problem_reference(spec.problem);
    if (!ref_) fail_setup("the harness has no GPU reference for problem " + spec.problem);
    // The buffers a kernel may touch first, in spec_buffers' order (slot order, then the
    // workspace): the recorder and the measuring process map them at the same addresses.
    const std::uint64_t ws = reference_only ? 0 : std::max<std::uint64_t>(c.workspace, static_cast<std::uint64_t>(o.workspace_mib) << 20);
    const auto bufs = spec_buffers(spec, c, ws);
    for (std::size_t i = 0; i < spec.tensors.size(); ++i) {
      Slot s;
      s.t = &spec.tensors[i];
      s.n = c.elements(i);
      const Placement where = reference_only ? Placement::plain
                              : s.t->role == KFLEET_TENSOR_INPUT ? Placement::input : Placement::kernel;
      s.device = std::make_unique<DeviceBuffer>(bufs[i].bytes, where, bufs[i].name);
      slots_.push_back(std::move(s));
    }
    if (ws) {
      workspace_ = std::make_unique<DeviceBuffer>(ws, Placement::kernel, "workspace");
      KFLEET_GPU_CHECK(gpuMemset(workspace_->get(), 0, workspace_->bytes()));
    }
    // The harness's own memory: each in-place slot's input, the fp32 values the reference
    // reads, the references (zeroed whenever a kernel runs: scrub_reference).
    for (auto& s : slots_) {
      if (s.t->role == KFLEET_TENSOR_INOUT) s.pristine = std::make_unique<DeviceBuffer>(s.device->bytes());
      if (s.t->role != KFLEET_TENSOR_OUTPUT) {
        s.real = std::make_unique<DeviceBuffer>(s.n * sizeof(float));
        KFLEET_GPU_CHECK(gpuMemset(s.real->get(), 0, s.real->bytes()));
      }
      fp8_operands = fp8_operands || s.t->dtype == KFLEET_FP8_E4M3;
    }
    for (const auto& out : spec.outputs) {
      refs_.push_back(std::make_unique<DeviceBuffer>(slots_[static_cast<std::size_t>(out.slot)].n * sizeof(float)));
      KFLEET_GPU_CHECK(gpuMemset(refs_.back()->get(), 0, refs_.back()->bytes()));
    }
    flops = c.flops;
    bytes = c.bytes;
    scalars_ = c.scalars;
    for (auto& v : scalars_)
      if (std::isnan(v)) v = 1.0;  // a per-tensor fp8 scale, set by fill below
    fill("case", seed, content_targets(), &scalars_);
    update_scales();
  }

  std::vector<std::uint8_t> args_bytes() const override {
    const auto* b = reinterpret_cast<const std::uint8_t*>(&args_);
    return std::vector<std::uint8_t>(b, b + sizeof args_);
  }
  int launch_entry(gpuStream_t stream) override { return call_problem_entry(&args_, stream); }
  std::vector<double> cpu_reference() const override { return {}; }  // the library's CPU
                                                                       // references are kfleet's
  std::vector<DoNothing> do_nothing_outputs() const override { return {}; }  // spec's lazy ones

  void update_scales() override {
    std::vector<std::uint64_t> addr;
    for (const auto& s : slots_) addr.push_back(reinterpret_cast<std::uint64_t>(s.device->get()));
    const std::uint64_t ws = workspace_ ? reinterpret_cast<std::uint64_t>(workspace_->get()) : 0;
    const auto a = spec_args(spec_, case_, addr, scalars_, ws, workspace_ ? workspace_->bytes() : 0);
    const std::string err = problems::build_problem_args(a, &args_);
    if (!err.empty()) fail_setup("problem " + spec_.problem + " does not fit kfleet_problem_args: " + err);
  }

  void refresh_inputs(std::uint64_t seed) override {
    fill("refresh", seed, content_targets(), &scalars_);
    update_scales();
  }

  std::string inputs_changed_since_refresh() override { return inputs_changed(); }

  // Every input compared, on the device, with what the draw that made it makes again.
  std::string inputs_changed() const override {
    static DeviceBuffer* counter = new DeviceBuffer(sizeof(unsigned long long));  // see device.cu
    std::vector<std::unique_ptr<DeviceBuffer>> again;
    std::vector<void*> targets;
    for (const auto& s : slots_) {
      again.push_back(std::make_unique<DeviceBuffer>(s.t->role == KFLEET_TENSOR_OUTPUT ? 0 : s.device->bytes()));
      targets.push_back(again.back()->get());
    }
    std::vector<double> scalars = scalars_;
    fill(content_salt_, content_seed_, targets, &scalars);
    gpuStream_t hs = harness_stream();
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].t->role != KFLEET_TENSOR_INPUT || !again[i]->bytes()) continue;
      KFLEET_GPU_CHECK(gpuMemsetAsync(counter->get(), 0, sizeof(unsigned long long), hs));
      launch_count_bytes_differing(hs, static_cast<const std::uint8_t*>(slots_[i].device->get()),
                                   static_cast<const std::uint8_t*>(again[i]->get()), again[i]->bytes(),
                                   static_cast<unsigned long long*>(counter->get()));
      unsigned long long diff = 0;
      KFLEET_GPU_CHECK(gpuMemcpyAsync(&diff, counter->get(), sizeof diff, gpuMemcpyDeviceToHost, hs));
      KFLEET_GPU_CHECK(gpuStreamSynchronize(hs));
      if (diff)
        return "input " + slots_[i].t->name + " was modified by the kernel (" + std::to_string(diff) +
               " bytes differ from what was generated)";
    }
    return "";
  }

  // Both ways are the same here: the inputs are decoded on the device.
  void compute_reference(bool) override {
    gpuStream_t hs = harness_stream();
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      if (s.t->role == KFLEET_TENSOR_OUTPUT) continue;
      const float* block_scales = nullptr;
      BlockMap m;
      float scalar_scale = 1;
      if (s.t->init.scale_tensor >= 0) {
        block_scales = static_cast<const float*>(slots_[static_cast<std::size_t>(s.t->init.scale_tensor)].device->get());
        m = block_map(case_.shapes[i], s.t->init.block);
      } else if (s.t->init.scale_scalar >= 0) {
        scalar_scale = static_cast<float>(scalars_[static_cast<std::size_t>(s.t->init.scale_scalar)]);
      }
      launch_decode_slot(hs, content(i), s.t->dtype, s.n, block_scales, m, scalar_scale,
                         static_cast<float*>(s.real->get()));
    }
    run_reference();
  }

  void run_reference() override {
    ProblemRefArgs a;
    a.dims = case_.dims;
    a.scalars = scalars_;
    a.shapes = case_.shapes;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const bool in = slots_[i].t->role != KFLEET_TENSOR_OUTPUT;
      a.in.push_back(in ? static_cast<const float*>(slots_[i].real->get()) : nullptr);
      a.raw.push_back(in ? content(i) : nullptr);
    }
    for (auto& r : refs_) a.out.push_back(static_cast<float*>(r->get()));
    a.stream = harness_stream();
    ref_(a);
    KFLEET_GPU_CHECK(gpuGetLastError());
    KFLEET_GPU_CHECK(gpuStreamSynchronize(harness_stream()));
  }

  void scrub_reference() override {
    gpuStream_t hs = harness_stream();
    for (auto& r : refs_) KFLEET_GPU_CHECK(gpuMemsetAsync(r->get(), 0, r->bytes(), hs));
    for (auto& s : slots_)
      if (s.real) KFLEET_GPU_CHECK(gpuMemsetAsync(s.real->get(), 0, s.real->bytes(), hs));
    KFLEET_GPU_CHECK(gpuStreamSynchronize(hs));
  }

  void prepare_outputs(gpuStream_t stream) override {
    for (auto& s : slots_) {
      if (s.t->role == KFLEET_TENSOR_OUTPUT)
        KFLEET_GPU_CHECK(gpuMemsetAsync(s.device->get(), 0xFF, s.device->bytes(), stream));
      else if (s.t->role == KFLEET_TENSOR_INOUT)
        KFLEET_GPU_CHECK(gpuMemcpyAsync(s.device->get(), s.pristine->get(), s.device->bytes(),
                                        gpuMemcpyDeviceToDevice, stream));
    }
  }

  std::string recheck_outputs(const Options&, float* max_abs) override {
    compute_reference(true);
    *max_abs = 0;
    std::string why;
    Inputs inputs;
    for (std::size_t k = 0; k < spec_.outputs.size() && why.empty(); ++k) {
      const SpecOutput& out = spec_.outputs[k];
      const Slot& s = slots_[static_cast<std::size_t>(out.slot)];
      const SpecCheck& c = out.check;
      if (c.kind == "tolerance" && is_float(s.t->dtype) && c.rel_l2 < 0) {  // on the device
        const double atol = c.atol >= 0 ? c.atol : 0, rtol = c.atol >= 0 ? c.rtol : 0;
        const DeviceCheck d = check_on_device(s.device->get(), s.t->dtype,
                                              static_cast<const float*>(refs_[k]->get()), s.n, atol, rtol);
        *max_abs = std::max(*max_abs, d.max_abs);
        if (d.unwritten) why = std::to_string(d.unwritten) + " of " + std::to_string(s.n) + " elements never written";
        else if (d.nan || d.inf) why = "output has NaN/Inf";
        else if ((atol > 0 || rtol > 0) && d.violations)
          why = fmt("%.0f of %.0f elements outside atol %g + rtol %g * |ref|", static_cast<double>(d.violations),
                    static_cast<double>(s.n), atol, rtol);
        else if (c.max_abs >= 0 && d.max_abs > c.max_abs)
          why = fmt("max_abs %.6g > %g", d.max_abs, c.max_abs);
        if (!why.empty()) why = "output " + out.name + " (tolerance check): " + why;
        continue;
      }
      if (inputs.empty()) inputs = input_values();
      const auto ref = reference_values(k);
      std::size_t unwritten = 0;
      const auto act = output_values(k, ref, &unwritten);
      if (unwritten) {
        why = "output " + out.name + ": " + std::to_string(unwritten) + " of " + std::to_string(s.n) +
              " elements never written";
        continue;
      }
      const CheckResult r = check(k, act, ref, inputs);
      *max_abs = std::max(*max_abs, static_cast<float>(r.m.max_abs));
      why = r.reason;
    }
    scrub_reference();
    return why;
  }

  // ---- For the correctness stage ----

  using Inputs = SpecInputs;  // per slot, the decoded input ({} if not needed)

  // The inputs a check or a do-nothing output reads (topk's `of`, a lazy copy), downloaded
  // while compute_reference's fp32 copies exist.
  Inputs input_values() const {
    Inputs v(slots_.size());
    for (int i : slots_checks_read(spec_)) v[static_cast<std::size_t>(i)] = floats(*slots_[static_cast<std::size_t>(i)].real);
    return v;
  }

  std::vector<double> reference_values(std::size_t k) const { return floats(*refs_[k]); }

  std::vector<double> output_values(std::size_t k, const std::vector<double>& ref, std::size_t* unwritten) const {
    const Slot& s = slots_[static_cast<std::size_t>(spec_.outputs[k].slot)];
    const auto raw = download_on_harness_stream(*s.device);
    std::vector<double> v = decode_output(s.t->dtype, raw, s.n, &ref, unwritten);
    if (s.t->role == KFLEET_TENSOR_INOUT) *unwritten = 0;  // holds its input, never poisoned
    return v;
  }

  CheckResult check(std::size_t k, const std::vector<double>& act, const std::vector<double>& ref,
                    const Inputs& inputs) const {
    CheckResult r = problem_output_check(spec_, case_, k, act, ref, inputs);
    if (r.reference_fault) fail_setup("the GPU reference of " + spec_.problem + ": " + r.reason);
    return r;
  }

  std::vector<double> lazy_values(std::size_t k, const SpecLazy& l, const std::vector<double>& ref,
                                  const Inputs& inputs) const {
    return problem_lazy_output(spec_, case_, k, l, ref, inputs);
  }

  // Each input slot's bytes as the device holds them (empty for outputs), and the scalars.
  std::vector<std::vector<std::uint8_t>> input_bytes() const {
    std::vector<std::vector<std::uint8_t>> raw(slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].t->role == KFLEET_TENSOR_OUTPUT) continue;
      raw[i].resize(slots_[i].device->bytes());
      KFLEET_GPU_CHECK(gpuMemcpyAsync(raw[i].data(), content(i), raw[i].size(), gpuMemcpyDeviceToHost, harness_stream()));
    }
    KFLEET_GPU_CHECK(gpuStreamSynchronize(harness_stream()));
    return raw;
  }
  const std::vector<double>& scalar_values() const { return scalars_; }

  const ProblemSpec& spec() const { return spec_; }
  const SpecCase& spec_case() const { return case_; }
  std::size_t elements_of(std::size_t k) const { return slots_[static_cast<std::size_t>(spec_.outputs[k].slot)].n; }
  bool own_buffer(std::size_t k) const {
    return slots_[static_cast<std::size_t>(spec_.outputs[k].slot)].t->role == KFLEET_TENSOR_OUTPUT;
  }

 private:
  struct Slot {
    const SpecTensor* t = nullptr;
    std::size_t n = 0;
    std::unique_ptr<DeviceBuffer> device;    // what the kernel gets (fixed arena in replay)
    std::unique_ptr<DeviceBuffer> pristine;  // inout: the input, copied in before each launch
    std::unique_ptr<DeviceBuffer> real;      // inputs: decoded fp32 for the reference
  };

  // Where each slot's input content lives: an input's own buffer, an inout's pristine copy.
  std::vector<void*> content_targets() const {
    std::vector<void*> t;
    for (const auto& s : slots_)
      t.push_back(s.t->role == KFLEET_TENSOR_INOUT ? s.pristine->get()
                  : s.t->role == KFLEET_TENSOR_INPUT ? s.device->get() : nullptr);
    return t;
  }
  const void* content(std::size_t i) const {
    return slots_[i].t->role == KFLEET_TENSOR_INOUT ? slots_[i].pristine->get() : slots_[i].device->get();
  }

  static std::vector<double> floats(const DeviceBuffer& b) {
    const auto raw = download_on_harness_stream(b);
    std::vector<double> v(raw.size() / sizeof(float));
    for (std::size_t i = 0; i < v.size(); ++i) {
      float f;
      std::memcpy(&f, &raw[i * sizeof f], sizeof f);
      v[i] = f;
    }
    return v;
  }

  // Draws every input of the case for (`salt`, `seed`) into `targets` (per slot; an fp8
  // tensor's block scales go to its scale tensor's target), and a per-tensor fp8 scale into
  // `scalars`. Remembers what it drew into the problem's own buffers.
  void fill(const std::string& salt, std::uint64_t seed, const std::vector<void*>& targets,
            std::vector<double>* scalars) const {
    gpuStream_t hs = harness_stream();
    std::vector<std::vector<std::uint8_t>> host;  // kept until the copies are done
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const SpecTensor& t = *slots_[i].t;
      if (t.role == KFLEET_TENSOR_OUTPUT || t.init.dist == "scale") continue;
      const std::uint64_t stream = input_stream(spec_.problem, salt + "/" + case_.name, seed, static_cast<int>(i));
      const SpecInit& init = case_.inits[i];  // the case's draw of this slot
      if (init.dist == "int" || init.dist == "group_ends") {
        host.push_back(host_ints(t, init, case_, i, stream));
        KFLEET_GPU_CHECK(gpuMemcpyAsync(targets[i], host.back().data(), host.back().size(), gpuMemcpyHostToDevice, hs));
        continue;
      }
      const RealDraw d = spec_real_draw(init, case_.shapes[i].back(), stream);
      const std::size_t cols = static_cast<std::size_t>(case_.shapes[i].back());
      const std::vector<RowDraw> row_draws = draw_rows(d, stream, slots_[i].n / cols);
      std::unique_ptr<DeviceBuffer> rows;  // each row's factors, drawn on the host
      if (!row_draws.empty()) {
        rows = std::make_unique<DeviceBuffer>(row_draws.size() * sizeof(RowDraw));
        KFLEET_GPU_CHECK(gpuMemcpyAsync(rows->get(), row_draws.data(), rows->bytes(), gpuMemcpyHostToDevice, hs));
      }
      const RowDraw* rows_dev = rows ? static_cast<const RowDraw*>(rows->get()) : nullptr;
      if (t.dtype == KFLEET_FP8_E4M3 && init.scale_tensor >= 0) {
        const std::size_t st = static_cast<std::size_t>(init.scale_tensor), blocks = slots_[st].n;
        std::unique_ptr<DeviceBuffer> amp;
        if (d.amp_hi > 0) {  // each block's factor, drawn on the host
          std::vector<float> f(blocks);
          for (std::size_t b = 0; b < blocks; ++b) f[b] = static_cast<float>(draw_amplitude(d, stream, b));
          amp = std::make_unique<DeviceBuffer>(blocks * sizeof(float));
          KFLEET_GPU_CHECK(gpuMemcpyAsync(amp->get(), f.data(), blocks * sizeof(float), gpuMemcpyHostToDevice, hs));
          KFLEET_GPU_CHECK(gpuStreamSynchronize(hs));  // before `f` goes
        }
        launch_fill_fp8_blocks(hs, static_cast<std::uint8_t*>(targets[i]), static_cast<float*>(targets[st]), blocks, d,
                               stream, block_map(case_.shapes[i], init.block),
                               amp ? static_cast<const float*>(amp->get()) : nullptr, rows_dev);
        KFLEET_GPU_CHECK(gpuStreamSynchronize(hs));  // before `amp` and `rows` are freed
      } else {
        float inv_scale = 1;
        if (t.dtype == KFLEET_FP8_E4M3) {
          const double scale = tensor_fp8_scale(init);
          (*scalars)[static_cast<std::size_t>(init.scale_scalar)] = scale;
          inv_scale = static_cast<float>(1.0 / scale);
        }
        launch_fill_real(hs, targets[i], t.dtype, slots_[i].n, d, stream, inv_scale, rows_dev);
        KFLEET_GPU_CHECK(gpuStreamSynchronize(hs));  // before `rows` is freed
      }
      KFLEET_GPU_CHECK(gpuGetLastError());
    }
    KFLEET_GPU_CHECK(gpuStreamSynchronize(hs));
    if (targets == content_targets()) {
      content_salt_ = salt;
      content_seed_ = seed;
    }
  }

  const ProblemSpec& spec_;
  const SpecCase& case_;
  ProblemReferenceFn ref_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<DeviceBuffer>> refs_;  // per output, fp32
  std::vector<double> scalars_;
  mutable std::string content_salt_;
  mutable std::uint64_t content_seed_ = 0;
  kfleet_problem_args args_{};
};

namespace {

const ProblemSpec& spec_of(const Options& o) {
  static const ProblemSpec* spec = [&] {
    auto* s = new ProblemSpec;  // never freed: read once per process
    std::ifstream in(o.problem_spec, std::ios::binary);
    if (!in) fail_setup("cannot read the problem spec " + o.problem_spec);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string err = parse_problem_spec(ss.str(), s);
    if (!err.empty()) fail_setup(o.problem_spec + ": " + err);
    return s;
  }();
  return *spec;
}

}  // namespace

std::unique_ptr<Problem> make_generic_problem(const Options& o, std::uint64_t seed) {
  const ProblemSpec& spec = spec_of(o);
  const SpecCase* c = spec.find_case(o.case_name);
  if (!c) fail_usage("--case " + o.case_name + " is not a case of " + spec.problem + " (" + spec.case_names() + ")");
  if (o.replay_path.empty() && o.plan_path.empty() && !problem_kernel_linked())
    fail_usage("this binary has no kfleet_problem_launch (or the KFLEET_PROBLEM_ENTRY it was built with)");
  return with_python_scratch(o, std::make_unique<GenericProblem>(o, spec, *c, seed));
}

std::string problem_plan_fields(const Problem& p, std::string* error) {
  const auto* g = dynamic_cast<const GenericProblem*>(&p);
  if (!g) {
    *error = "not a problem of the library";
    return "";
  }
  return problem_fields_json(g->spec(), g->spec_case(), g->args_bytes(), error);
}

// The GPU reference checked against the library's fp64 CPU reference (PROBLEM-ABI.md, "The
// GPU reference, checked"): on --case (the agent names the run's smallest case; "" the spec's
// smallest) at the first seed, from the bytes the GPU drew, in buffers of the harness's own. A
// `reference_check` line; a disagreement is the fleet's failure (exit 3, phase "reference"), and
// no kernel runs.
int run_reference_check(const Options& o) {
  const ProblemSpec& spec = spec_of(o);
  const SpecCase* c = o.case_name.empty() ? &smallest_case(spec) : spec.find_case(o.case_name);
  if (!c) fail_usage("--case " + o.case_name + " is not a case of " + spec.problem + " (" + spec.case_names() + ")");
  const std::uint64_t seed = o.seeds.empty() ? 0 : o.seeds.front();
  const auto start = std::chrono::steady_clock::now();
  GenericProblem p(o, spec, *c, seed, true);
  p.compute_reference(false);
  std::vector<std::vector<double>> gpu;
  for (std::size_t k = 0; k < spec.outputs.size(); ++k) gpu.push_back(p.reference_values(k));
  const auto data = spec_case_data(spec, *c, p.input_bytes(), p.scalar_values());
  const ReferenceAgreement a = check_gpu_reference(spec, *c, data, gpu);
  std::string outputs;
  for (std::size_t k = 0; k < a.outputs.size(); ++k)
    outputs += (outputs.empty() ? "" : ",") + JsonLine::quote(spec.outputs[k].name) + ":" +
               JsonLine("o").str("check", spec.outputs[k].check.kind).boolean("pass", a.outputs[k].reason.empty())
                   .str("reason", a.outputs[k].reason).num("max_abs", a.outputs[k].m.max_abs)
                   .num("rel_l2", a.outputs[k].m.rel_l2).text();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  JsonLine("reference_check").str("problem", spec.problem).str("case", c->name)
      .integer("seed", static_cast<long long>(seed)).boolean("pass", a.pass).str("reason", a.reason)
      .str("against", "fp64 CPU reference").raw("outputs", "{" + outputs + "}").num("time_ms", ms).print();
  if (!a.pass) {
    JsonLine("error").str("phase", "reference").str("call", "reference check")
        .str("message", "kfleet's GPU reference of " + spec.problem + " disagrees with its fp64 CPU reference on case " +
                            c->name + " seed " + std::to_string(seed) + ": " + a.reason +
                            " (the fleet's failure: no kernel was judged)")
        .print();
    std::exit(3);
  }
  return 0;
}

// The correctness stage of a problem: as run_correctness, with the spec's check per output and
// its lazy outputs as the gate-strength test (PROBLEM-ABI.md, "Problems of the library").
int run_generic_correctness(const Options& o) {
  bool all_pass = true;
  for (const std::uint64_t seed : o.seeds) {
    auto owned = make_generic_problem(o, seed);
    auto& p = static_cast<GenericProblem&>(*owned);
    if (!o.replay_path.empty()) attach_replay(o, p, recording_name(o.stage, seed));
    const ProblemSpec& spec = p.spec();
    // The references and the inputs the checks read go to the host, and are zeroed on the
    // device before the kernel runs.
    p.compute_reference(false);
    std::vector<std::vector<double>> refs;
    for (std::size_t k = 0; k < spec.outputs.size(); ++k) refs.push_back(p.reference_values(k));
    const GenericProblem::Inputs inputs = p.input_values();
    p.scrub_reference();
    // Gate strength: each do-nothing output must fail its output's check.
    std::string weak, strength;
    for (std::size_t k = 0; k < spec.outputs.size(); ++k) {
      for (const auto& l : spec.outputs[k].lazy) {
        const std::string lazy = lazy_name(spec, l);
        const auto r = p.check(k, p.lazy_values(k, l, refs[k], inputs), refs[k], inputs);
        strength += (strength.empty() ? "" : ",") + JsonLine::quote(spec.outputs[k].name + ": " + lazy) + ":" +
                    JsonLine::quote(r.reason.empty() ? "passes" : r.reason);
        if (r.reason.empty() && weak.empty())
          weak = "output " + spec.outputs[k].name + ": its check passes a do-nothing output (" + lazy +
                 "), so it cannot tell a kernel's work from none: the case is refused as too weak";
      }
    }
    strength = "{" + strength + "}";
    if (!weak.empty()) {
      JsonLine("correctness").str("case", o.case_name).integer("seed", static_cast<long long>(seed))
          .str("problem", spec.problem).boolean("pass", false).str("reason", weak).boolean("refused", true)
          .raw("do_nothing", strength).print();
      all_pass = false;
      continue;
    }
    p.prepare_outputs(harness_stream());
    KFLEET_GPU_CHECK(gpuDeviceSynchronize());
    const auto [status, ms, read_only] = checked_launch(o, seed, [&] { return p.launch(nullptr); });

    std::string reason;
    if (status == KFLEET_UNSUPPORTED) reason = "kernel returned KFLEET_UNSUPPORTED for this case";
    else if (status != KFLEET_OK) reason = "kernel launch returned status " + std::to_string(status);
    std::vector<std::vector<double>> outs(spec.outputs.size());
    std::size_t unwritten_total = 0, elements = 0;
    for (std::size_t k = 0; k < spec.outputs.size(); ++k) {
      std::size_t unwritten = 0;
      outs[k] = p.output_values(k, refs[k], &unwritten);
      unwritten_total += unwritten;
      elements += p.elements_of(k);
      if (reason.empty() && unwritten)
        reason = "output " + spec.outputs[k].name + ": " + std::to_string(unwritten) + " of " +
                 std::to_string(p.elements_of(k)) + " elements were never written";
    }
    const std::string changed = p.inputs_changed();
    if (reason.empty() && !changed.empty()) reason = changed;
    std::string per_output;
    double max_abs = 0, max_rel = 0, rel_l2 = 0;
    std::size_t nan = 0, inf = 0, violations = 0;
    for (std::size_t k = 0; k < spec.outputs.size(); ++k) {
      const auto r = p.check(k, outs[k], refs[k], inputs);
      if (reason.empty()) reason = r.reason;
      max_abs = std::max(max_abs, r.m.max_abs);
      max_rel = std::max(max_rel, r.m.max_rel);
      rel_l2 = std::max(rel_l2, r.m.rel_l2);
      nan += r.m.nan_count;
      inf += r.m.inf_count;
      violations += r.violations;
      per_output += (per_output.empty() ? "" : ",") + JsonLine::quote(spec.outputs[k].name) + ":" +
                    JsonLine("o").str("check", spec.outputs[k].check.kind).boolean("pass", r.reason.empty())
                        .str("reason", r.reason).num("max_abs", r.m.max_abs).num("rel_l2", r.m.rel_l2)
                        .integer("violations", static_cast<long long>(r.violations)).text();
    }
    const bool pass = reason.empty();
    all_pass = all_pass && pass;
    JsonLine("correctness")
        .str("case", o.case_name)
        .integer("seed", static_cast<long long>(seed))
        .str("problem", spec.problem)
        .boolean("pass", pass)
        .str("reason", reason)
        .num("max_abs", max_abs)
        .num("max_rel", max_rel)
        .num("rel_l2", rel_l2)
        .integer("nan_count", static_cast<long long>(nan - std::min(nan, unwritten_total)))
        .integer("inf_count", static_cast<long long>(inf))
        .integer("unwritten", static_cast<long long>(unwritten_total))
        .boolean("inputs_intact", changed.empty())
        .boolean("inputs_read_only", read_only)
        .integer("elements", static_cast<long long>(elements))
        .integer("allclose_violations", static_cast<long long>(violations))
        .raw("outputs", "{" + per_output + "}")
        .num("time_ms", ms)
        .raw("do_nothing", strength)
        .print();
  }
  return all_pass ? 0 : 1;
}

}  // namespace kfleet::harness
