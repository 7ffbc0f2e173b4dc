package pgtest

import "os/exec"

// account is the user PostgreSQL's programs run as; on Windows always this
// process's own (pg_ctl drops administrator rights itself).
type account struct{}

func unprivileged() (*account, error) { return nil, nil }

func (a *account) own(string) error { return nil }

func (a *account) apply(*exec.Cmd) {}
