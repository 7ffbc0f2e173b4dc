package host

import (
	"fmt"
	"os"
	"runtime"

	"github.com/hashicorp/go-hclog"
)

// privateDataDir creates the data directory dir when missing, readable by
// its owner only (0700): it holds the audit log, memory and the providers'
// data. An existing one that other users may enter is made private when
// it is the operating system's default (chosen is false), which only this
// program uses; a folder the user chose is left as it is, with a warning,
// since it may be shared on purpose. Windows folders follow their ACLs and
// are left alone.
func privateDataDir(dir string, chosen bool, log hclog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir %s: %w", dir, err)
	}
	if runtime.GOOS == "windows" {
		return nil
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	mode := info.Mode().Perm()
	switch {
	case mode&0o077 == 0:
		return nil
	case chosen:
		log.Warn("the data directory can be read by other users; run chmod 700 on it unless that is intended",
			"path", dir, "mode", fmt.Sprintf("%04o", mode))
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("make data dir %s private: %w", dir, err)
	}
	log.Info("made the data directory private", "path", dir, "was", fmt.Sprintf("%04o", mode))
	return nil
}
