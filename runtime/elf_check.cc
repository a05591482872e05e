#include "runtime/elf_check.h"

#include <elf.h>

#include <cstring>
#include <string>

namespace tessera::runtime {
namespace {

Status bad(const std::string& what) {
  return Status(ErrorCode::kParseError, "not a shared object this machine can load: " + what);
}

// Whether [offset, offset + count * size) lies within `total` bytes, without overflow.
bool within(uint64_t offset, uint64_t count, uint64_t size, uint64_t total) {
  if (offset > total) return false;
  if (size != 0 && count > (total - offset) / size) return false;
  return true;
}

template <typename T>
T read_at(std::string_view bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

}  // namespace

uint16_t host_elf_machine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#elif defined(__arm__)
  return EM_ARM;
#elif defined(__riscv)
  return EM_RISCV;
#else
  return EM_NONE;
#endif
}

std::string elf_machine_name(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case EM_386: return "i386";
    default: return "ELF machine " + std::to_string(machine);
  }
}

Status check_shared_object(std::string_view bytes) {
  const uint64_t size = bytes.size();
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) return bad("no ELF header");
  const auto h = read_at<Elf64_Ehdr>(bytes, 0);
  if (h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_ident[EI_DATA] != ELFDATA2LSB)
    return bad("not a 64-bit little-endian ELF file");
  if (h.e_type != ET_DYN) return bad("an ELF file of type " + std::to_string(h.e_type) + ", not a shared object");
  if (host_elf_machine() != EM_NONE && h.e_machine != host_elf_machine())
    return bad("built for " + elf_machine_name(h.e_machine) + ", this machine is " +
               elf_machine_name(host_elf_machine()));
  if (h.e_phentsize != sizeof(Elf64_Phdr) || !within(h.e_phoff, h.e_phnum, sizeof(Elf64_Phdr), size))
    return bad("its program headers lie outside its " + std::to_string(size) + " bytes (truncated?)");
  for (uint16_t i = 0; i < h.e_phnum; ++i) {
    const auto p = read_at<Elf64_Phdr>(bytes, h.e_phoff + uint64_t{i} * sizeof(Elf64_Phdr));
    if (!within(p.p_offset, 1, p.p_filesz, size))
      return bad("segment " + std::to_string(i) + " ends at byte " + std::to_string(p.p_offset + p.p_filesz) + " of " +
                 std::to_string(size) + " (truncated?)");
    if (p.p_type == PT_LOAD && p.p_filesz > p.p_memsz) return bad("segment " + std::to_string(i) + " is inconsistent");
  }
  if (h.e_shnum > 0) {
    if (h.e_shentsize != sizeof(Elf64_Shdr) || !within(h.e_shoff, h.e_shnum, sizeof(Elf64_Shdr), size))
      return bad("its section headers lie outside its " + std::to_string(size) + " bytes (truncated?)");
    for (uint16_t i = 0; i < h.e_shnum; ++i) {
      const auto s = read_at<Elf64_Shdr>(bytes, h.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr));
      if (s.sh_type != SHT_NOBITS && !within(s.sh_offset, 1, s.sh_size, size))
        return bad("section " + std::to_string(i) + " lies outside its " + std::to_string(size) +
                   " bytes (truncated?)");
    }
  }
  return Status::ok();
}

}  // namespace tessera::runtime
