#pragma once
// The device code clang embeds for HIP, read without a GPU or ROCm: the offload bundle (section
// .hip_fatbin of a host object or executable), the code object for one target in it, and each
// kernel's explicit arguments (offset and size in its kernarg segment) from the code object's
// metadata note (NT_AMDGPU_METADATA, MessagePack). Replay mode on HIP needs that layout where
// CUDA asks cudaFuncGetParamInfo: HIP has no such call, and a captured kernel node gives only
// pointers to its arguments. Everything here comes from a job's build: malformed input is an
// error value, never a crash or an unbounded allocation.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "launch_list.hpp"

namespace kfleet::harness {

// The contents of ELF section `name` (a 64-bit little-endian ELF: a host object, an executable
// or a code object). "" on success, else why not.
std::string elf_section(const std::string& elf, const std::string& name, std::string* contents);

// The code object for `arch` ("gfx1151"; a target id's features after ':' are ignored on both
// sides) in a clang offload bundle (`__CLANG_OFFLOAD_BUNDLE__`). "" on success, else why not,
// with the targets the bundle has.
std::string bundle_code_object(const std::string& bundle, const std::string& arch,
                               std::string* code_object);

// Every code object for `arch` in a .hip_fatbin section: one offload bundle per translation unit
// the linker put there (each starts with the bundle magic; padding between them is skipped).
// "" on success, else why not.
std::string fatbin_code_objects(const std::string& section, const std::string& arch,
                                std::vector<std::string>* code_objects);

// Each kernel's explicit arguments, by kernel name (`.name`: the mangled name that
// hipKernelNameRefByPtr and hipModuleGetFunction use), in declaration order; hidden arguments
// (`hidden_*` value kinds, which the runtime fills) are left out. "" on success, else why not.
std::string amdgpu_kernel_args(const std::string& code_object,
                               std::map<std::string, std::vector<ParamSlot>>* kernels);

}  // namespace kfleet::harness
