package syntax

import "runtime"

func runtimeGC() { runtime.GC() }
