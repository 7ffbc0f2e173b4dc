package config

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// knownFolder returns the roaming or local application data folder as the
// shell knows it, which does not depend on the environment.
func knownFolder(id string) (string, error) {
	var f *windows.KNOWNFOLDERID
	switch id {
	case folderRoaming:
		f = windows.FOLDERID_RoamingAppData
	case folderLocal:
		f = windows.FOLDERID_LocalAppData
	default:
		return "", fmt.Errorf("unknown folder %s", id)
	}
	dir, err := windows.KnownFolderPath(f, 0)
	if err != nil {
		return "", fmt.Errorf("known folder %s: %w", id, err)
	}
	return dir, nil
}
