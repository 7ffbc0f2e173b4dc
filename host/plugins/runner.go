package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
)

// procRunner starts one provider process for go-plugin (ClientConfig
// RunnerFunc) so that the host, not go-plugin, owns the process: it puts
// the process in a group of its own from the moment of exec (a process
// group on Unix, a job object on Windows), which lets it kill a provider
// whose handshake never completes together with its children; it learns
// of the exit at once instead of polling; it gives the process the null
// device as stdin, never the host's; and it verifies the executable's
// checksum with go-plugin's SecureConfig immediately before exec.
type procRunner struct {
	path   string
	cmd    *exec.Cmd
	secure *plugin.SecureConfig
	stdout io.ReadCloser
	stderr io.ReadCloser
	group  procGroup

	pid    atomic.Int64
	exited chan struct{} // closed when Wait has returned
	once   sync.Once
}

var _ runner.Runner = (*procRunner)(nil)

// newProcRunner prepares path with args, the environment env plus the
// variables go-plugin set on spec (its magic cookie, protocol versions,
// client certificate and socket directory).
func newProcRunner(path string, args, env []string, spec *exec.Cmd, secure *plugin.SecureConfig) (*procRunner, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(append([]string(nil), env...), spec.Env...)
	cmd.Stdin = nil // the null device
	r := &procRunner{path: path, cmd: cmd, secure: secure, exited: make(chan struct{})}
	r.group.prepare(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	r.stdout, r.stderr = stdout, stderr
	return r, nil
}

// Start verifies the checksum, when there is one, and starts the process
// in its group.
func (r *procRunner) Start(context.Context) error {
	if r.secure != nil {
		ok, err := r.secure.Check(r.path)
		if err != nil {
			return fmt.Errorf("%w: verify %s: %w", ErrChecksum, r.path, err)
		}
		if !ok {
			return fmt.Errorf("%w mismatch: %s changed after it was verified; refused to run it", ErrChecksum, r.path)
		}
	}
	if err := r.cmd.Start(); err != nil {
		return err
	}
	if err := r.group.started(r.cmd); err != nil {
		// The group killed the process; reap it.
		_ = r.Wait(context.Background())
		return err
	}
	r.pid.Store(int64(r.cmd.Process.Pid))
	return nil
}

// Wait waits for the process to exit, then marks it exited.
func (r *procRunner) Wait(context.Context) error {
	err := r.cmd.Wait()
	r.once.Do(func() {
		r.group.exited()
		close(r.exited)
	})
	return err
}

// Kill kills the process's whole group.
func (r *procRunner) Kill(context.Context) error {
	if pid := r.Pid(); pid > 0 {
		r.group.kill(pid)
	}
	return nil
}

// Pid is the process id (on Unix also the process group id), 0 before
// Start.
func (r *procRunner) Pid() int { return int(r.pid.Load()) }

// Exited is closed once the process has exited and been reaped.
func (r *procRunner) Exited() <-chan struct{} { return r.exited }

// Stdout carries the handshake line.
func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr carries the provider's log.
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }

// Name is the executable's path.
func (r *procRunner) Name() string { return r.path }

// ID is the process id.
func (r *procRunner) ID() string { return strconv.Itoa(r.Pid()) }

// Diagnose explains a failed handshake: the exit status when the process
// already exited.
func (r *procRunner) Diagnose(context.Context) string {
	select {
	case <-r.exited:
		if st := r.cmd.ProcessState; st != nil {
			return fmt.Sprintf("the provider exited before its handshake (%s)", st)
		}
	default:
	}
	if _, err := os.Stat(r.path); errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("%s does not exist", r.path)
	}
	return ""
}

// PluginToHost keeps addresses as they are: the process runs on this host.
func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

// HostToPlugin keeps addresses as they are.
func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
