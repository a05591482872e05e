// Moved to base/dtype.h; this forwarding header goes with the include rewrite.
#pragma once
#include "base/dtype.h"
