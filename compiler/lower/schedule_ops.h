// Compatibility header: what lowering exported before it was split into
// passes. New code includes infer_bounds.h (infer_bounds, kMaxVectorLanes,
// kMaxUnrollExtent) or lower.h (lower, schedule_to_loops) directly.
#pragma once

#include "compiler/lower/infer_bounds.h"
#include "compiler/lower/lower.h"
