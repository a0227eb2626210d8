// plan(): the whole scheduling decision for one snapshot. Deterministic: the same snapshot
// always gives the same plan, so the control plane can re-plan on every change.
#include <algorithm>
#include <map>
#include <cctype>
#include <set>
#include <sstream>
#include <unordered_set>

#include "kfleet/common/language.hpp"
#include "kfleet/scheduler/scheduler.hpp"

namespace kfleet::sched {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool iequals(const std::string& a, const std::string& b) { return lower(a) == lower(b); }

std::string ordinal(std::size_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

// Whether `g` runs kernels of `language`. triton and torch need the agent's Python to record
// them (kfleet::gpu_runs_language); cuda and hip stay matched by the GPU class alone, as before
// (a portable .cu source of language cuda is built with HIP for a gfx target, and agents that
// report no vendor still serve them).
bool runs_language(const GpuInfo& g, const std::string& language) {
  if (!is_python_language(language)) return true;
  return gpu_runs_language(g, language);
}

bool serves_gpu(const AgentSlot& a, const PendingJob& j, bool any_language = false) {
  if (a.compiler) return false;  // builds only: never a GPU stage
  return std::any_of(a.gpus.begin(), a.gpus.end(), [&](const GpuInfo& g) {
    return gpu_matches(j.gpu, g) && (any_language || runs_language(g, j.language));
  });
}

// 1-based rank of the agent's region in the job's list; 0 when the job does not accept it.
std::size_t region_rank(const PendingJob& j, const AgentSlot& a) {
  if (j.regions.empty()) return 1;
  for (std::size_t i = 0; i < j.regions.size(); ++i)
    if (region_matches(j.regions[i], a.region)) return i + 1;
  return 0;
}

std::string host_of(const AgentSlot& a) {
  return a.host.empty() ? "agent:" + std::to_string(a.id) : a.host;
}

// What a host holds now and in this plan.
struct HostUse {
  int running = 0;                   // leases held
  int assigned = 0;                  // given in this plan
  bool exclusive = false;            // a host-exclusive job holds it (or was given it now)
  std::int64_t reserved_for = 0;     // a host-exclusive job waiting for it to drain
  std::set<int> busy_slots;
};

struct Planner {
  explicit Planner(const Snapshot& snap) : s(snap), agents(snap.all_agents()) {}
  const Snapshot& s;
  const std::vector<AgentSlot>& agents;  // s.all_agents()
  Plan out;
  std::unordered_set<std::int64_t> taken;  // agents given a job in this plan
  int requested = 0;             // capacity requests issued in this plan
  std::map<std::string, HostUse> hosts;

  // A kind of job: what decides which agents can run it (GPU, language, regions). Listed at
  // the first job of the kind, once per plan: the idle GPU agents that can run it, best first
  // (the job's region order, then agent id), of which jobs of the kind take the first free
  // one in turn; and every agent that serves it, idle or not, for its waits and counts.
  struct Candidate {
    std::size_t rank = 0;  // region_rank
    std::size_t pos = 0;   // index in `agents`
    const AgentSlot* a = nullptr;
  };
  struct Kind {
    std::vector<Candidate> idle;
    std::size_t next = 0;  // idle[0, next) are taken
    std::vector<const AgentSlot*> serving;  // in `agents` order
  };
  std::map<std::string, Kind> kinds;

  static std::string kind_key(const PendingJob& j) {
    std::string key = j.gpu + '\x1e' + j.language;
    for (const auto& r : j.regions) key += '\x1f' + r;
    return key;
  }

  Kind& kind(const PendingJob& j) {
    auto [it, fresh] = kinds.try_emplace(kind_key(j));
    Kind& k = it->second;
    if (!fresh) return k;
    for (std::size_t pos = 0; pos < agents.size(); ++pos) {
      const AgentSlot& a = agents[pos];
      if (!serves_gpu(a, j)) continue;
      const std::size_t rank = region_rank(j, a);
      if (rank == 0) continue;
      k.serving.push_back(&a);
      if (a.idle) k.idle.push_back({rank, pos, &a});
    }
    std::sort(k.idle.begin(), k.idle.end(), [](const Candidate& x, const Candidate& y) {
      return x.rank != y.rank ? x.rank < y.rank : x.a->id < y.a->id;
    });
    return k;
  }

  // The idle compile agents in `agents` order, and how many of them builds have taken.
  std::optional<std::vector<const AgentSlot*>> idle_compilers;
  std::size_t next_compiler = 0;
  std::optional<std::string> compiler_wait;

  void start() {
    for (const auto& r : s.running) {
      auto& h = hosts[r.host];
      ++h.running;
      h.busy_slots.insert(r.slot);
      if (r.host_exclusive) h.exclusive = true;
    }
  }

  // May the job take this agent's slot, host-wise?
  bool host_allows(const PendingJob& j, const AgentSlot& a) {
    const auto& h = hosts[host_of(a)];
    if (h.busy_slots.count(a.slot)) return false;  // its slot still holds a lease
    if (h.exclusive) return false;
    if (h.reserved_for != 0 && h.reserved_for != j.id) return false;
    if (j.host_exclusive && (h.running > 0 || h.assigned > 0)) return false;
    return true;
  }

  void job(const PendingJob& j) {
    if (j.compile) {
      if (!try_assign_compile(j)) out.wait.push_back(Wait{j.id, false, waiting_for_compiler(), 0});
      return;  // GPU capacity is asked for once the job has built
    }
    if (try_assign(j)) return;
    if (wait_for_host(j)) return;
    if (const InFlight* f = in_flight_for(j.id)) {
      out.wait.push_back(Wait{j.id, true, "capacity requested in " + f->region, 0});
      return;
    }
    if (ride_request(j)) return;
    if (const std::string cls = provisioned_class(j); !cls.empty()) {
      const int left = s.provisioner->capacity_budget - static_cast<int>(s.in_flight.size()) -
                       requested;
      if (left > 0) {
        provision(j, cls);
        return;
      }
      out.wait.push_back(Wait{j.id, false,
                              waiting_for_agent(j) + "; provisioner '" + s.provisioner->name +
                                  "' has no budget left (" +
                                  std::to_string(s.in_flight.size() + requested) +
                                  " requests under way)",
                              0});
      return;
    }
    out.wait.push_back(Wait{j.id, false, cannot_grow_reason(j), 0});
  }

  // The first idle compile agent (the lowest id, agents being in id order): builds are the
  // same everywhere.
  bool try_assign_compile(const PendingJob& j) {
    if (!idle_compilers) {
      idle_compilers.emplace();
      for (const auto& a : agents)
        if (a.compiler && a.idle) idle_compilers->push_back(&a);
    }
    for (; next_compiler < idle_compilers->size(); ++next_compiler) {
      const AgentSlot& a = *(*idle_compilers)[next_compiler];
      if (taken.count(a.id)) continue;
      taken.insert(a.id);
      ++next_compiler;
      out.assign.push_back(Assign{j.id, a.id, a.region,
                                  "idle compile agent " + std::to_string(a.id) +
                                      ": build and resources gate before any GPU time"});
      return true;
    }
    return false;
  }

  std::string waiting_for_compiler() {
    if (!compiler_wait) {
      int busy = 0;
      for (const auto& a : agents)
        if (a.compiler) ++busy;
      compiler_wait = "waiting for an idle compile agent (" + std::to_string(busy) + " busy, 0 idle)";
    }
    return *compiler_wait;
  }

  // The best free agent for the job: the first of its kind's candidates (best first) that is
  // not taken and whose host lets it.
  bool try_assign(const PendingJob& j) {
    Kind& k = kind(j);
    while (k.next < k.idle.size() && taken.count(k.idle[k.next].a->id)) ++k.next;
    const AgentSlot* best = nullptr;
    std::size_t best_rank = 0;
    for (std::size_t i = k.next; i < k.idle.size(); ++i) {
      const Candidate& c = k.idle[i];
      if (taken.count(c.a->id) || !host_allows(j, *c.a)) continue;
      best = c.a;
      best_rank = c.rank;
      break;
    }
    if (!best) return false;
    taken.insert(best->id);
    auto& h = hosts[host_of(*best)];
    ++h.assigned;
    h.busy_slots.insert(best->slot);
    if (j.host_exclusive) {
      h.exclusive = true;
      h.reserved_for = 0;
    }
    std::ostringstream why;
    why << "idle " << j.gpu << " agent " << best->id << " in " << best->region;
    if (!j.regions.empty()) why << " (" << ordinal(best_rank) << " choice)";
    if (!best->host.empty()) why << ", GPU " << best->slot << " of host " << best->host;
    if (j.host_exclusive) why << " (host-exclusive: its other GPUs stay idle)";
    out.assign.push_back(Assign{j.id, best->id, best->region, why.str()});
    return true;
  }

  // No slot now, but a host that serves the job exists and is only busy: wait for that host
  // rather than for any GPU. A host-exclusive job reserves the host it waits for (the one with
  // the fewest leases), so jobs behind it cannot keep it busy forever; a job blocked only by a
  // host-exclusive job says so.
  bool wait_for_host(const PendingJob& j) {
    Kind& k = kind(j);
    if (!j.host_exclusive) {
      // A free slot (an idle agent) kept from us only by its host's exclusive holder or
      // reservation: the first such agent in `agents` order.
      const Candidate* first = nullptr;
      for (std::size_t i = k.next; i < k.idle.size(); ++i) {
        const Candidate& c = k.idle[i];
        if (taken.count(c.a->id) || (first && first->pos < c.pos)) continue;
        const auto& h = hosts[host_of(*c.a)];
        if (!h.busy_slots.count(c.a->slot) &&
            (h.exclusive || (h.reserved_for != 0 && h.reserved_for != j.id)))
          first = &c;
      }
      if (!first) return false;
      const std::string name = host_of(*first->a);
      const auto& h = hosts[name];
      const char* what = h.exclusive ? "runs a host-exclusive job" : "is draining for a host-exclusive job";
      out.wait.push_back(Wait{j.id, false,
                              "waiting for host " + name + ": it " + what + " (" +
                                  std::to_string(h.running + h.assigned) + " of its GPUs busy)",
                              0, "host", name});
      return true;
    }
    const AgentSlot* pick = nullptr;
    int pick_load = 0;
    for (const AgentSlot* ap : k.serving) {
      const AgentSlot& a = *ap;
      const std::string name = host_of(a);
      auto& h = hosts[name];
      if (h.reserved_for != 0 && h.reserved_for != j.id) continue;
      const int load = h.running + h.assigned;
      if (!pick || load < pick_load || (load == pick_load && host_of(*pick) > name)) {
        pick = &a;
        pick_load = load;
      }
    }
    if (!pick) return false;
    const std::string name = host_of(*pick);
    hosts[name].reserved_for = j.id;
    out.wait.push_back(Wait{j.id, false,
                            "host-exclusive: waiting for host " + name + " to drain (" +
                                std::to_string(pick_load) + " of its GPUs busy)",
                            0, "host", name});
    return true;
  }

  // Capacity is asked for in GPUs: a request for a multi-GPU instance brings a slot for each of
  // its GPUs, so queued jobs for the same GPU and region wait for those spare slots instead of
  // asking for an instance each. A host-exclusive job needs a host of its own.
  std::map<std::size_t, int> riders;          // in_flight index -> jobs riding on it
  std::map<std::size_t, int> riders_planned;  // out.provision index -> jobs riding on it

  bool rides(const PendingJob& j, const std::string& gpu, const std::string& region) const {
    if (!iequals(gpu, j.gpu)) return false;
    if (j.regions.empty()) return true;
    return std::any_of(j.regions.begin(), j.regions.end(),
                       [&](const std::string& r) { return region_matches(r, region); });
  }

  bool ride_request(const PendingJob& j) {
    if (j.host_exclusive) return false;
    auto wait = [&](const std::string& region, int gpus) {
      out.wait.push_back(Wait{j.id, true,
                              "capacity requested in " + region + ": an instance of " +
                                  std::to_string(gpus) + " GPUs is coming, one is for this job",
                              0});
      return true;
    };
    for (std::size_t i = 0; i < s.in_flight.size(); ++i) {
      const auto& f = s.in_flight[i];
      if (f.gpus <= 1 || riders[i] + 1 >= f.gpus || !rides(j, f.gpu, f.region)) continue;
      ++riders[i];
      return wait(f.region, f.gpus);
    }
    for (std::size_t i = 0; i < out.provision.size(); ++i) {
      const auto& r = out.provision[i];
      if (r.gpus <= 1 || riders_planned[i] + 1 >= r.gpus || !rides(j, r.gpu, r.region)) continue;
      ++riders_planned[i];
      return wait(r.region, r.gpus);
    }
    return false;
  }

  const InFlight* in_flight_for(std::int64_t job_id) const {
    for (const auto& f : s.in_flight)
      if (f.job_id == job_id) return &f;
    return nullptr;
  }

  // The provisioner's name for the job's GPU when it can grow and offers it, else "".
  std::string provisioned_class(const PendingJob& j) const {
    if (!s.provisioner || !s.provisioner->can_grow) return "";
    for (const auto& c : s.provisioner->gpu_classes)
      if (iequals(c, j.gpu)) return c;
    return "";
  }

  bool provisioner_offers(const std::string& region) const {
    const auto& regions = s.provisioner->regions;
    if (regions.empty()) return true;
    return std::any_of(regions.begin(), regions.end(), [&](const std::string& r) {
      return region_matches(r, region) || region_matches(region, r);
    });
  }

  const store::RegionBlock* active_block(const std::string& region, const std::string& cls) const {
    const store::RegionBlock* found = nullptr;
    for (const auto& b : s.blocks) {
      if (b.provider != s.provisioner->name || b.until_ms <= s.now) continue;
      if (!region_matches(b.region, region)) continue;
      if (!b.gpu_class.empty() && !iequals(b.gpu_class, cls)) continue;
      // When several blocks apply, the one that lasts longest is what the user waits on.
      if (!found || b.until_ms > found->until_ms) found = &b;
    }
    return found;
  }

  static std::string block_text(const store::RegionBlock& b, const std::string& region) {
    const std::string until = " until " + format_iso8601(b.until_ms);
    if (b.kind == "quota") return "quota exceeded in " + region + ": " + b.reason + until;
    if (b.kind == "fatal") return "provisioning failed in " + region + ": " + b.reason + until;
    return region + " blocked (" + b.kind + ")" + until;
  }

  // A region the provisioner lists only by its zones ("us-central1" when it lists
  // us-central1-a and us-central1-b) stands for those zones, in the provisioner's order.
  std::vector<std::string> expand_to_zones(const std::vector<std::string>& wanted) const {
    std::vector<std::string> out;
    auto add = [&](const std::string& r) {
      if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
    };
    const auto& offered = s.provisioner->regions;
    for (const auto& w : wanted) {
      if (std::find(offered.begin(), offered.end(), w) != offered.end()) {
        add(w);
        continue;
      }
      bool zones = false;
      for (const auto& o : offered)
        if (o != w && region_matches(w, o)) add(o), zones = true;
      if (!zones) add(w);
    }
    return out;
  }

  void provision(const PendingJob& j, const std::string& cls) {
    const std::vector<std::string> candidates =
        j.regions.empty() ? s.provisioner->regions : expand_to_zones(j.regions);
    std::vector<std::string> skipped;
    TimeMs retry_at = 0;
    for (const auto& region : candidates) {
      if (!provisioner_offers(region)) {
        skipped.push_back("provisioner '" + s.provisioner->name + "' does not offer " + region);
        continue;
      }
      if (const auto* b = active_block(region, cls)) {
        skipped.push_back(block_text(*b, region));
        if (retry_at == 0 || b->until_ms < retry_at) retry_at = b->until_ms;
        continue;
      }
      std::string why = "no idle " + j.gpu + " agent";
      if (!skipped.empty()) why += "; " + join(skipped, "; ");
      why += "; requesting capacity in " + region;
      const int gpus = std::max(s.provisioner->gpus_per_instance, 1);
      if (gpus > 1) why += " (one instance, " + std::to_string(gpus) + " GPUs)";
      out.provision.push_back(RequestCapacity{j.id, region, cls, why, gpus});
      ++requested;
      return;
    }
    if (candidates.empty()) {
      out.wait.push_back(Wait{j.id, false,
                              "no idle " + j.gpu + " agent and provisioner '" +
                                  s.provisioner->name + "' lists no regions",
                              0});
      return;
    }
    out.wait.push_back(
        Wait{j.id, true, "no capacity in any region: " + join(skipped, "; "), retry_at});
  }

  std::map<std::string, std::string> reason_cache;

  std::string waiting_for_agent(const PendingJob& j) {
    const std::size_t busy = kind(j).serving.size();  // none is idle and free
    return "waiting for an idle " + j.gpu + " agent (" + std::to_string(busy) + " busy, 0 idle)";
  }

  // Many queued jobs share a GPU and region list: the reason is computed once per pass for
  // each such pair (a long queue would otherwise scan every agent for every job).
  std::string cannot_grow_reason(const PendingJob& j) {
    auto [it, fresh] = reason_cache.try_emplace(kind_key(j));
    if (fresh) it->second = compute_cannot_grow_reason(j);
    return it->second;
  }

  std::string compute_cannot_grow_reason(const PendingJob& j) {
    if (!kind(j).serving.empty()) return waiting_for_agent(j);
    std::string where = j.regions.empty() ? "" : " in " + join(j.regions, ", ");
    std::string tail = " and the fleet cannot grow";
    if (s.provisioner && s.provisioner->can_grow)
      tail = " and provisioner '" + s.provisioner->name + "' does not offer it";
    // Agents of the GPU exist, but none runs the job's language: name what their Python
    // lacks (torch, and triton for triton), with what the first one that reported a Python
    // said of it.
    bool of_gpu = false;
    std::string reported;
    for (const auto& a : agents) {
      if (!serves_gpu(a, j, /*any_language=*/true) || region_rank(j, a) == 0) continue;
      of_gpu = true;
      for (const auto& g : a.gpus) {
        if (!gpu_matches(j.gpu, g)) continue;
        const std::string py = python_runtime_summary(g.extra);
        if (py != "-" && reported.empty()) reported = "agent " + std::to_string(a.id) + ": " + py;
        break;
      }
    }
    if (of_gpu) {
      const std::string needs = j.language == "triton" ? "torch and triton" : j.language;
      return "no agent of class " + j.gpu + where + " has " + needs + " for " + j.language +
             " kernels (" + (reported.empty() ? std::string("none reported a Python") : reported) +
             ")" + tail;
    }
    return "no agent" + where + " serves gpu '" + j.gpu + "'" + tail;
  }
};

}  // namespace

bool could_run(const AgentSlot& a, const PendingJob& j) {
  return serves_gpu(a, j) && region_rank(j, a) != 0;
}

Plan plan(const Snapshot& s) {
  std::vector<const PendingJob*> order;
  order.reserve(s.queue.size());
  for (const auto& j : s.queue) order.push_back(&j);
  std::sort(order.begin(), order.end(), [](const PendingJob* a, const PendingJob* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    return a->id < b->id;
  });
  Planner p(s);
  p.start();
  for (const auto* j : order) p.job(*j);
  return std::move(p.out);
}

}  // namespace kfleet::sched
