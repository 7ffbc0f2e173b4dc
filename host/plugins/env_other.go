//go:build !windows

package plugins

import "slices"

func defaultEnv() []string { return slices.Clone(baseEnv) }
