//go:build linux

// Command restart measures how soon a provider killed with SIGKILL answers
// again through openhuman-host: the time from the kill to the first
// successful tools/call of its tool, without the client doing anything but
// calling. The tests check that the provider comes back; this is where the
// number lives.
//
// Each run launches `openhuman-host serve` over stdio with the no-op
// provider of bench/noopprovider loaded as a third-party provider (so a
// restart includes its checksum and go-plugin's handshake with automatic
// mTLS), kills the provider process once, and calls its tool every
// -poll until one call succeeds. A host restarts a provider's first crash
// in a minute at once (later ones back off), so every run is a fresh host.
// Reported: the median and the maximum over -runs, against the target of 2
// s, which is printed, never asserted.
//
//	go run -tags sqlite_fts5 ./bench/restart -host "$PWD/bin/openhuman-host"
//
// Everything runs on this machine; every loop is bounded in count and time.
// It finds the provider's process in /proc, so it runs on Linux.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/bench/internal/noop"
	"github.com/openhuman/openhuman-host/host/plugins"
)

// target is how soon a killed provider should answer again.
const target = 2 * time.Second

// giveUp bounds one run: a provider not back by then is reported as an
// error.
const giveUp = time.Minute

func main() {
	fs := flag.NewFlagSet("restart", flag.ContinueOnError)
	hostBin := fs.String("host", "", "absolute path of the openhuman-host binary (required)")
	runs := fs.Int("runs", 10, "host launches, one kill each")
	poll := fs.Duration("poll", 5*time.Millisecond, "pause between calls while the provider is down")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		os.Exit(2)
	}
	switch {
	case *hostBin == "" || !filepath.IsAbs(*hostBin):
		fmt.Fprintln(os.Stderr, "restart: -host: give the absolute path of bin/openhuman-host (make build)")
		os.Exit(2)
	case *runs < 1 || *runs > 100:
		fmt.Fprintln(os.Stderr, "restart: -runs: want 1 to 100")
		os.Exit(2)
	case *poll < time.Millisecond || *poll > time.Second:
		fmt.Fprintln(os.Stderr, "restart: -poll: want 1ms to 1s")
		os.Exit(2)
	}
	if err := run(*hostBin, *runs, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "restart:", err)
		os.Exit(1)
	}
}

func run(hostBin string, runs int, poll time.Duration) error {
	tmp, err := os.MkdirTemp("", "openhuman-restart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	provBin := filepath.Join(tmp, "noopprovider")
	fmt.Fprintln(os.Stderr, "restart: building the no-op provider")
	build := exec.Command("go", "build", "-o", provBin, "./bench/noopprovider")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the no-op provider (run from the module root): %w\n%s", err, out)
	}
	sum, err := plugins.FileSHA256(provBin)
	if err != nil {
		return err
	}
	config := filepath.Join(tmp, "config.toml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("[providers.memory]\nenabled = false\n\n[providers.agent]\nenabled = false\n\n"+
		"[providers.bench]\ncommand = %q\nsha256 = %q\n", provBin, sum)), 0o600); err != nil {
		return err
	}
	env := append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(tmp, "data"), "XDG_CONFIG_HOME="+filepath.Join(tmp, "config"))

	var times []time.Duration
	for i := range runs {
		d, err := once(hostBin, config, env, provBin, poll)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		times = append(times, d)
		fmt.Fprintf(os.Stderr, "restart: run %d: back after %s\n", i+1, d.Round(time.Millisecond))
	}
	slices.Sort(times)
	med, worst := times[len(times)/2], times[len(times)-1]
	load := "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil && len(strings.Fields(string(b))) >= 3 {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	fmt.Printf("killed provider answering again (%d runs, load average %s): median %s, max %s; target ≤ %s: %s\n",
		runs, load, med.Round(time.Millisecond), worst.Round(time.Millisecond), target, met(med <= target))
	return nil
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// once launches a host, kills its provider and returns how long the
// provider's tool took to answer again.
func once(hostBin, config string, env []string, provBin string, poll time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	cmd := exec.Command(hostBin, "--config", config, "serve")
	cmd.Env = env
	client := mcp.NewClient(&mcp.Implementation{Name: "openhuman-bench-restart", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 3 * time.Second}, nil)
	if err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	call := func() error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: noop.ProviderTool, Arguments: map[string]any{}})
		if err == nil && res.IsError {
			err = errors.New("isError result")
		}
		return err
	}
	if err := call(); err != nil {
		return 0, fmt.Errorf("%s before the kill: %w", noop.ProviderTool, err)
	}
	pid, err := childRunning(cmd.Process.Pid, provBin)
	if err != nil {
		return 0, err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("kill the provider: %w", err)
	}
	start := time.Now()
	for call() != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("the provider did not answer within %s of its kill", giveUp)
		}
		time.Sleep(poll)
	}
	return time.Since(start), nil
}

// childRunning returns the pid of parent's child process whose executable
// has bin's file name (the host runs a verified copy of bin).
func childRunning(parent int, bin string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the parenthesised command: state, ppid, …
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		// The host runs a verified copy of a third-party provider
		// (<data>/<name>/.exec/verified-*/<file>), so the file name is
		// what the child shares with bin.
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && filepath.Base(exe) == filepath.Base(bin) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process of %s under the host (pid %d)", bin, parent)
}
