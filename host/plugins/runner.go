package plugins

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
)

// procRunner starts one provider process for go-plugin (ClientConfig
// RunnerFunc) so that the host, not go-plugin, owns the process: it puts
// the process in a group of its own from the moment of exec (a process
// group on Unix, a job object on Windows), which lets it kill a provider
// whose handshake never completes together with its children; it learns
// of the exit at once instead of polling; it gives the process the null
// device as stdin, never the host's; and, when the executable has a
// checksum, it runs a private copy whose bytes it hashed while copying,
// so that the file verified is the file executed (see [verifiedCopy]). A
// script ("#!") runs in place instead, checked just before exec: its
// interpreter loads it and its dependencies from its own folder.
type procRunner struct {
	path   string
	cmd    *exec.Cmd
	secure *plugin.SecureConfig
	// copyDir is where verified copies go; "" means the system's
	// temporary folder.
	copyDir string
	// removeCopy deletes the verified copy, once the process has exited.
	removeCopy func()
	stdout     io.ReadCloser
	stderr     io.ReadCloser
	group      procGroup

	pid    atomic.Int64
	exited chan struct{} // closed when Wait has returned
	once   sync.Once
}

var _ runner.Runner = (*procRunner)(nil)

// newProcRunner prepares path with args, the environment env plus the
// variables go-plugin set on spec (its magic cookie, protocol versions,
// client certificate and socket directory).
func newProcRunner(path string, args, env []string, spec *exec.Cmd, secure *plugin.SecureConfig, copyDir string) (*procRunner, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(append([]string(nil), env...), spec.Env...)
	cmd.Stdin = nil // the null device
	r := &procRunner{path: path, cmd: cmd, secure: secure, copyDir: copyDir, removeCopy: func() {}, exited: make(chan struct{})}
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

// Start verifies the checksum, when there is one, by copying the
// executable and hashing the copy's bytes, and starts the process (from
// the copy) in its group.
func (r *procRunner) Start(context.Context) error {
	switch {
	case r.secure == nil:
	case isScript(r.path):
		// An interpreter reads a script, and what it loads, from the
		// script's own folder, so a script runs where it is, checked just
		// before its start.
		ok, err := r.secure.Check(r.path)
		if err != nil {
			return fmt.Errorf("%w: verify %s: %w", ErrChecksum, r.path, err)
		}
		if !ok {
			return fmt.Errorf("%w mismatch: %s changed after it was verified; refused to run it", ErrChecksum, r.path)
		}
	default:
		copied, remove, err := verifiedCopy(r.path, r.secure.Checksum, r.copyDir)
		if err != nil {
			return err
		}
		r.cmd.Path, r.removeCopy = copied, remove
	}
	if h := testHookVerified.Load(); h != nil {
		(*h)(r.path)
	}
	if err := r.cmd.Start(); err != nil {
		r.removeCopy()
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
		r.removeCopy()
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

// isScript reports whether the file at path starts with "#!": a script
// its interpreter reads by path.
func isScript(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 2)
	n, _ := io.ReadFull(f, head)
	return n == 2 && string(head) == "#!"
}

// testHookVerified, when set by a test, runs between the verification of
// an executable (given as configured) and its start.
var testHookVerified atomic.Pointer[func(path string)]

// verifiedCopy copies the executable at path into a new folder that only
// this user may enter (0700, under dir, or the system's temporary folder
// when dir is ""), hashing the bytes it copies, and returns the copy's
// path when their SHA-256 is want. Executing the copy closes the window
// in which the file at path could be swapped between its check and its
// exec. remove deletes the copy and its folder; call it once the process
// has exited (Windows cannot delete a running executable). A mismatch is
// an error wrapping [ErrChecksum].
func verifiedCopy(path string, want []byte, dir string) (copied string, remove func(), err error) {
	src, err := os.Open(path)
	if err != nil {
		return "", nil, fmt.Errorf("%w: verify %s: %w", ErrChecksum, path, err)
	}
	defer src.Close()
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", nil, fmt.Errorf("%w: verify %s: create %s: %w", ErrChecksum, path, dir, err)
		}
	}
	tmp, err := os.MkdirTemp(dir, "verified-")
	if err != nil {
		return "", nil, fmt.Errorf("%w: verify %s: %w", ErrChecksum, path, err)
	}
	remove = func() { _ = os.RemoveAll(tmp) }
	copied = filepath.Join(tmp, filepath.Base(path))
	h := sha256.New()
	// No fork may happen while the copy is open for writing: a child
	// forked meanwhile would hold the descriptor until it execs, and
	// executing a file open for writing fails with ETXTBSY.
	syscall.ForkLock.RLock()
	dst, err := os.OpenFile(copied, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err == nil {
		_, err = io.Copy(io.MultiWriter(dst, h), src)
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		remove()
		return "", nil, fmt.Errorf("%w: verify %s: copy it to %s: %w", ErrChecksum, path, tmp, err)
	}
	if !bytes.Equal(h.Sum(nil), want) {
		remove()
		return "", nil, fmt.Errorf("%w mismatch: %s changed after it was verified (its sha256 is now %x); refused to run it", ErrChecksum, path, h.Sum(nil))
	}
	return copied, remove, nil
}
