// Moved to base/status.h; this forwarding header goes with the include rewrite.
#pragma once
#include "base/status.h"
