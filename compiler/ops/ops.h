// The operator library: every operator builder and the operator spec parser.
#pragma once

#include "compiler/ops/conv.h"
#include "compiler/ops/elementwise.h"
#include "compiler/ops/linalg.h"
#include "compiler/ops/op_spec.h"
#include "compiler/ops/pool.h"
#include "compiler/ops/quantize.h"
#include "compiler/ops/reduction.h"
#include "compiler/ops/winograd.h"
