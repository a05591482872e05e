// A kernel library checked before dlopen maps it.
//
// dlopen trusts the file's headers: a package whose library was cut short
// (a truncated download, a crafted package with a correct checksum) gets
// its segments mapped past the file's end, and the loader dies of SIGBUS
// touching them, leaving its temporary file behind. check_shared_object
// verifies that the bytes are a shared object of this machine whose
// program headers, segments and sections all lie inside them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tessera::runtime {

/// Ok when `bytes` is a 64-bit little-endian ELF shared object for this
/// machine whose headers, segments and sections lie within `bytes`.
/// Errors: kParseError saying what is wrong.
Status check_shared_object(std::string_view bytes);

/// The ELF machine (e_machine) this runtime was built for; EM_NONE when it
/// has no name for it.
uint16_t host_elf_machine();

/// "x86_64", "aarch64", ... for an ELF machine; "ELF machine N" otherwise.
std::string elf_machine_name(uint16_t machine);

}  // namespace tessera::runtime
