//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// account is the user PostgreSQL's programs run as: nil means this
// process's own.
type account struct {
	name     string
	uid, gid uint32
}

// unprivileged returns nil unless this process runs as root, which
// PostgreSQL refuses; then the "postgres" account that Debian's package
// creates, else "nobody".
func unprivileged() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("pgtest: running as root, and neither a postgres nor a nobody account exists to run PostgreSQL as")
}

// own gives path to the account.
func (a *account) own(path string) error {
	if a == nil {
		return nil
	}
	if err := os.Chown(path, int(a.uid), int(a.gid)); err != nil {
		return fmt.Errorf("pgtest: give %s to %s: %w", path, a.name, err)
	}
	return nil
}

// apply makes cmd run as the account.
func (a *account) apply(cmd *exec.Cmd) {
	if a == nil {
		return
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.uid, Gid: a.gid}}
}
