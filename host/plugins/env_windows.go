package plugins

import "slices"

func defaultEnv() []string { return slices.Concat(baseEnv, windowsEnv) }
