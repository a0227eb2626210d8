#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "discovery/amd.hpp"
#include "discovery/gpu_naming.hpp"
#include "discovery/nvml.hpp"

namespace kb = kfleet::backends;
namespace fs = std::filesystem;

TEST(GpuNaming, NvidiaClasses) {
  EXPECT_EQ(kb::nvidia_gpu_class("NVIDIA L4"), "L4");
  EXPECT_EQ(kb::nvidia_gpu_class("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(kb::nvidia_gpu_class("NVIDIA H200"), "H200");
  EXPECT_EQ(kb::nvidia_gpu_class("NVIDIA L40S"), "L40S");
  EXPECT_EQ(kb::nvidia_gpu_class("Tesla T4"), "T4");
  EXPECT_EQ(kb::nvidia_gpu_class("NVIDIA A100-SXM4-80GB"), "A100");
  EXPECT_EQ(kb::nvidia_gpu_class("NVIDIA RTX 6000 Ada Generation"), "RTX 6000 Ada");
}

TEST(GpuNaming, Architectures) {
  EXPECT_EQ(kb::nvidia_arch(8, 9), "sm_89");
  EXPECT_EQ(kb::nvidia_arch(9, 0), "sm_90a");
  EXPECT_EQ(kb::nvidia_arch(8, 0), "sm_80");
  EXPECT_EQ(kb::amd_gfx_arch(110501), "gfx1151");
  EXPECT_EQ(kb::amd_gfx_arch(90010), "gfx90a");
  EXPECT_EQ(kb::amd_gfx_arch(90402), "gfx942");
  EXPECT_FALSE(kb::amd_gfx_arch(0).has_value());
}

TEST(AmdDiscovery, ReadsAFakeSysfsTree) {
  auto root = fs::temp_directory_path() / ("kfleet_sys_" + std::to_string(::getpid()));
  auto write = [&](const fs::path& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  };
  write("class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 16\ngfx_target_version 0\n");
  write("class/kfd/kfd/topology/nodes/1/properties",
        "simd_count 80\ngfx_target_version 110501\nmax_waves_per_simd 16\n");
  write("class/kfd/kfd/topology/nodes/1/name", "gfx1151\n");
  write("class/kfd/kfd/topology/nodes/1/gpu_id", "30381\n");
  write("class/drm/card0/device/vendor", "0x10de\n");  // an NVIDIA card beside it
  write("class/drm/card1/device/vendor", "0x1002\n");
  write("class/drm/card1/device/product_name", "AMD Radeon 8060S\n");
  write("class/drm/card1/device/mem_info_vram_total", "536870912\n");
  auto gpus = kb::discover_amd_gpus(root.string());
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].arch, "gfx1151");
  EXPECT_EQ(gpus[0].gpu_class, "gfx1151");
  EXPECT_EQ(gpus[0].vendor, "amd");
  EXPECT_EQ(gpus[0].name, "AMD Radeon 8060S");
  EXPECT_EQ(gpus[0].memory_bytes, 536870912);
  EXPECT_EQ(gpus[0].extra["simd_count"], 80);
  EXPECT_EQ(gpus[0].extra["kfd_gpu_id"], 30381);
  EXPECT_TRUE(kb::discover_amd_gpus((root / "missing").string()).empty());
  fs::remove_all(root);
}

TEST(AmdDiscovery, KfdNamesTheProcessesComputingOnAGpu) {
  auto root = fs::temp_directory_path() / ("kfleet_kfd_" + std::to_string(::getpid()));
  auto write = [&](const fs::path& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  };
  const std::string proc = "class/kfd/kfd/proc/";
  write(proc + "1200/queues/3/gpuid", "30381\n");  // a compute queue on our GPU
  write(proc + "1200/vram_30381", "1610571776\n");
  write(proc + "1300/vram_30381", "4096\n");        // VRAM on it, no queue (yet)
  write(proc + "1400/queues/0/gpuid", "55555\n");  // another GPU only
  write(proc + "1400/vram_55555", "8192\n");
  write(proc + "1500/vram_30381", "0\n");          // opened KFD, holds nothing here
  write(proc + "1600/queues/1/gpuid", "30381\n");  // ourselves
  auto mine = kb::amd_compute_processes(root.string(), 30381, 1600);
  EXPECT_EQ(mine, (std::vector<unsigned>{1200, 1300}));
  auto any = kb::amd_compute_processes(root.string(), 0, 1600);
  EXPECT_EQ(any, (std::vector<unsigned>{1200, 1300, 1400}));
  EXPECT_TRUE(kb::amd_compute_processes((root / "none").string(), 30381, 1).empty());
  fs::remove_all(root);
}

TEST(AmdDiscovery, ParsesRocmSmiJson) {
  const std::string text = R"js({"card0": {"Temperature (Sensor edge) (C)": "45.0",
    "Current Socket Graphics Package Power (W)": "31.5", "sclk clock speed:": "(2900Mhz)",
    "mclk clock speed:": "(1000Mhz)"}})js";
  auto s = kb::parse_rocm_smi_json(text, 0);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->sm_clock_mhz, 2900);
  EXPECT_EQ(s->mem_clock_mhz, 1000);
  EXPECT_EQ(s->temperature_c, 45);
  EXPECT_DOUBLE_EQ(s->power_w, 31.5);
  EXPECT_FALSE(kb::parse_rocm_smi_json(text, 1).ok());
  EXPECT_FALSE(kb::parse_rocm_smi_json("not json", 0).ok());
}

TEST(Nvml, LoadsOrExplainsWhyNot) {
  // On a host without the NVIDIA driver the error must name the library; with a driver, every
  // device must come out with a class and an sm_ arch.
  auto n = kb::Nvml::load();
  if (!n.ok()) {
    EXPECT_NE(n.error().message.find("libnvidia-ml.so.1"), std::string::npos);
    return;
  }
  auto devs = (*n)->devices();
  ASSERT_TRUE(devs.ok()) << devs.error().message;
  for (const auto& g : *devs) {
    EXPECT_FALSE(g.gpu_class.empty());
    EXPECT_EQ(g.arch.rfind("sm_", 0), 0u);
    EXPECT_GT(g.memory_bytes, 0);
  }
}
