// Target moved to base/target.h (LLVM's side: compiler/codegen/llvm_target.h); this
// forwarding header goes with the include rewrite.
#pragma once
#include "base/target.h"
