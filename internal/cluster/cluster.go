// Package cluster runs replicas of the built openhuman-host binary that
// share one PostgreSQL database, behind HAProxy ([haproxytest]), on
// loopback: what the replica tests (test/replicas) and the replica
// benchmark (bench/replicas) drive. Every replica loads the provider of
// test/replicas/replicaprovider and nothing else.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/internal/freeport"
	"github.com/openhuman/openhuman-host/internal/haproxytest"
	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// ProviderPackage is the import path of the provider every replica
// loads.
const ProviderPackage = "github.com/openhuman/openhuman-host/test/replicas/replicaprovider"

// Tools the provider serves, as clients name them.
const (
	ToolRead  = "rep_read"
	ToolWrite = "rep_write"
	ToolBlock = "rep_block"
)

// Options describes a cluster.
type Options struct {
	// Bin is the openhuman-host binary.
	Bin string
	// Provider is the built provider ([BuildProvider]).
	Provider string
	// DSN is the PostgreSQL database the replicas share, as the role
	// they connect as.
	DSN string
	// MigrateDSN, when set, is the same database as the role that owns
	// the schema, which `openhuman-host migrate` connects as; else DSN.
	MigrateDSN string
	// AfterMigrate, when set, runs after the migration and before the
	// replicas start (to grant the replicas' role its rights).
	AfterMigrate func(context.Context) error
	// Dir holds the config file and each replica's data directory.
	Dir string
	// MaxActionsPerHour is [autonomy] max_actions_per_hour; nil for no
	// budget.
	MaxActionsPerHour *int
	// LogLevel is the replicas' [server] log_level; default "warn".
	LogLevel string
	// ExtraConfig is appended to the config file.
	ExtraConfig string
	// ConfirmActs is [autonomy] confirm_acts; empty keeps the default.
	ConfirmActs string
	// Memory leaves the memory provider enabled (in each replica's data
	// directory); by default it is off.
	Memory bool
}

// BuildProvider builds [ProviderPackage] into dir with the go command and
// returns the binary's path.
func BuildProvider(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "replicaprovider")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ProviderPackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("cluster: build the provider: %w\n%s", err, out)
	}
	return bin, nil
}

// WriteConfig writes the replicas' shared config file into o.Dir and
// returns its path.
func WriteConfig(o Options) (string, error) {
	sum, err := plugins.FileSHA256(o.Provider)
	if err != nil {
		return "", fmt.Errorf("cluster: hash the provider: %w", err)
	}
	level := o.LogLevel
	if level == "" {
		level = "warn"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[server]\ntransport = \"http\"\nprovider_start_timeout_secs = 120\nlog_level = %q\n\n", level)
	b.WriteString("[storage]\ndriver = \"postgres\"\n\n")
	// A burst of reads from many clients must not overflow the queue of
	// audit rows waiting for the database.
	b.WriteString("[audit]\nqueue_size = 65536\n\n")
	b.WriteString("[autonomy]\n")
	if o.MaxActionsPerHour != nil {
		fmt.Fprintf(&b, "max_actions_per_hour = %d\n", *o.MaxActionsPerHour)
	}
	if o.ConfirmActs != "" {
		fmt.Fprintf(&b, "confirm_acts = %q\n", o.ConfirmActs)
	}
	b.WriteString("\n")
	if !o.Memory {
		b.WriteString("[providers.memory]\nenabled = false\n\n")
	}
	fmt.Fprintf(&b, "[providers.rep]\ncommand = %q\nsha256 = %q\n\n", o.Provider, sum)
	b.WriteString(o.ExtraConfig)
	path := filepath.Join(o.Dir, "config.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", fmt.Errorf("cluster: write the config: %w", err)
	}
	return path, nil
}

// environ is the environment of the binary's processes: PATH and the
// sandbox's directories, the DSN dsn, and extra.
func environ(o Options, dsn string, extra ...string) []string {
	home := filepath.Join(o.Dir, "home")
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"OPENHUMAN_POSTGRES_DSN=" + dsn,
	}
	return append(env, extra...)
}

// Migrate runs `openhuman-host migrate` with the config at cfg, as an
// operator does before starting replicas.
func Migrate(ctx context.Context, o Options, cfg string) error {
	cmd := exec.CommandContext(ctx, o.Bin, "--config", cfg, "--data-dir", filepath.Join(o.Dir, "migrate"), "migrate")
	dsn := o.MigrateDSN
	if dsn == "" {
		dsn = o.DSN
	}
	cmd.Env = environ(o, dsn)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster: openhuman-host migrate: %w\n%s", err, out)
	}
	return nil
}

// Replica is one running `openhuman-host serve --transport http`.
type Replica struct {
	// Name is its [server] replica name, "r1", "r2", ...
	Name string
	// Addr is where it listens, "127.0.0.1:port".
	Addr string
	// DataDir is its data directory.
	DataDir string

	cmd    *exec.Cmd
	done   chan struct{}
	stderr testwait.Buffer
}

// StartReplica starts the replica named name with the config at cfg on a
// free loopback port and returns once its /healthz names it (a replica
// serves once its providers have loaded).
func StartReplica(ctx context.Context, o Options, cfg, name string) (*Replica, error) {
	return freeport.Retry(ctx, 3, func() (*Replica, error) { return startReplica(ctx, o, cfg, name) })
}

func startReplica(ctx context.Context, o Options, cfg, name string) (*Replica, error) {
	port, err := testproc.FreePort()
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	r := &Replica{Name: name, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		DataDir: filepath.Join(o.Dir, "data-"+name), done: make(chan struct{})}
	r.cmd = exec.Command(o.Bin, "--config", cfg, "--data-dir", r.DataDir, "serve", "--transport", "http", "--port", strconv.Itoa(port))
	r.cmd.Env = environ(o, o.DSN, "OPENHUMAN_REPLICA="+name)
	r.cmd.Stderr = &r.stderr
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cluster: start replica %s: %w", name, err)
	}
	go func() {
		_ = r.cmd.Wait()
		close(r.done)
	}()
	for {
		h, err := r.Health(ctx)
		if err == nil && h.Replica == name {
			return r, nil
		}
		select {
		case <-r.done:
			return nil, fmt.Errorf("cluster: replica %s exited before it served: %s\n%s", name, r.cmd.ProcessState, r.Stderr())
		case <-ctx.Done():
			_ = r.Kill()
			return nil, fmt.Errorf("cluster: replica %s did not serve (last health check: %+v, %v): %w\n%s", name, h, err, ctx.Err(), r.Stderr())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Health asks the replica's /healthz directly.
func (r *Replica) Health(ctx context.Context) (server.Health, error) {
	var h server.Health
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Addr+server.HealthPath, nil)
	if err != nil {
		return h, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return h, fmt.Errorf("GET %s: %s", server.HealthPath, resp.Status)
	}
	err = json.NewDecoder(resp.Body).Decode(&h)
	return h, err
}

// Pid is the replica's process id.
func (r *Replica) Pid() int { return r.cmd.Process.Pid }

// Stderr is what the replica logged so far.
func (r *Replica) Stderr() string { return r.stderr.String() }

// Exited reports whether the process has exited.
func (r *Replica) Exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Kill ends the replica with SIGKILL, as a crash would, and waits for it
// to exit.
func (r *Replica) Kill() error {
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("cluster: kill replica %s: %w", r.Name, err)
	}
	<-r.done
	return nil
}

// Stop asks the replica to shut down (SIGTERM: its calls are cancelled
// and its audit rows flushed) and waits until it exits or ctx ends; then
// it is killed.
func (r *Replica) Stop(ctx context.Context) error {
	if r.Exited() {
		return nil
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("cluster: stop replica %s: %w", r.Name, err)
	}
	select {
	case <-r.done:
		if !r.cmd.ProcessState.Success() {
			return fmt.Errorf("cluster: replica %s exited with %s\n%s", r.Name, r.cmd.ProcessState, r.Stderr())
		}
		return nil
	case <-ctx.Done():
		_ = r.Kill()
		return fmt.Errorf("cluster: replica %s did not stop: %w", r.Name, ctx.Err())
	}
}

// Cluster is replicas behind one proxy.
type Cluster struct {
	// Replicas are the replicas, in the proxy's server order (r1 first).
	Replicas []*Replica
	// Proxy is the load balancer in front of them.
	Proxy *haproxytest.Proxy
}

// Start writes the config, migrates the database (then runs
// o.AfterMigrate), starts n replicas and then the proxy in front of them. On error, what started is stopped.
func Start(ctx context.Context, o Options, n int) (*Cluster, error) {
	cfg, err := WriteConfig(o)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, o, cfg); err != nil {
		return nil, err
	}
	if o.AfterMigrate != nil {
		if err := o.AfterMigrate(ctx); err != nil {
			return nil, fmt.Errorf("cluster: after the migration: %w", err)
		}
	}
	c := &Cluster{}
	addrs := make([]string, 0, n)
	for i := range n {
		r, err := StartReplica(ctx, o, cfg, "r"+strconv.Itoa(i+1))
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Replicas = append(c.Replicas, r)
		addrs = append(addrs, r.Addr)
	}
	if c.Proxy, err = haproxytest.Start(ctx, addrs); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Replica returns the replica named name, or nil.
func (c *Cluster) Replica(name string) *Replica {
	for _, r := range c.Replicas {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// WaitUp waits until the proxy's health checks see every replica not in
// down as UP and those in down as DOWN.
func (c *Cluster) WaitUp(ctx context.Context, down ...string) error {
	want := map[string]string{}
	for _, r := range c.Replicas {
		want[r.Name] = "UP"
	}
	for _, d := range down {
		want[d] = "DOWN"
	}
	for {
		got, err := c.Proxy.ServerStates(ctx)
		if err == nil && fmt.Sprint(got) == fmt.Sprint(want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: the proxy sees %v (%v), want %v: %w", got, err, want, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops every replica gracefully (flushing their audit rows), then
// the proxy; the first error is returned.
func (c *Cluster) Stop(ctx context.Context) error {
	var first error
	for _, r := range c.Replicas {
		if err := r.Stop(ctx); err != nil && first == nil {
			first = err
		}
	}
	if c.Proxy != nil {
		if err := c.Proxy.Stop(); err != nil && first == nil {
			first = err
		}
		c.Proxy = nil
	}
	return first
}

// Close kills whatever still runs.
func (c *Cluster) Close() {
	for _, r := range c.Replicas {
		_ = r.Kill()
	}
	if c.Proxy != nil {
		_ = c.Proxy.Stop()
		c.Proxy = nil
	}
}
