package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
)

// defaultsTarget is the host on its embedded default config (the memory
// and agent providers on), launched for its cold start only.
const defaultsTarget = "host/defaults"

// targetDefaultsColdStart is the longest cold start, launch to the first
// tools/list response, of the host on its defaults.
const targetDefaultsColdStart = 120 * time.Millisecond

// defaultsHost is the host with no config file, so it runs its embedded
// defaults; measured for cold start, not under load.
func defaultsHost(o *options, dir string) (*target, error) {
	t, err := hostTarget(o, dir, defaultsTarget, "", nil)
	if err != nil {
		return nil, err
	}
	// No --config: the config folder in XDG_CONFIG_HOME is empty, so
	// the host runs on its embedded defaults.
	t.configPath = ""
	t.tool, t.listed, t.coldOnly = memorytool.Search, memorytool.Search, true
	bin := o.hostBin
	t.command = func() *exec.Cmd {
		cmd := exec.Command(bin, "serve")
		cmd.Env = t.env
		return cmd
	}
	return t, nil
}

// breakdown is where one cold start of the host went, read from its debug
// log: Go's start, each provider's steps, and the rest.
type breakdown struct {
	Total time.Duration `json:"total_ns"`
	// Init is the time from the host program's package initialization
	// to it starting: reading the config, setting up logging and
	// telemetry.
	Init time.Duration `json:"init_ns"`
	// Providers is the time from then until the host was started: the
	// audit log opened, every provider loaded (in parallel), the
	// catalog and the MCP server built.
	Providers time.Duration `json:"providers_ns"`
	// Host is the host's own steps within Providers, as it logs them
	// with "host started"; zero when the log has no such line.
	Host hostSteps `json:"host"`
	// Steps are each provider's steps, by provider name.
	Steps map[string]providerSteps `json:"steps"`
}

// hostSteps are the steps of the host's start (host.Start) as it logs
// them with "host started".
type hostSteps struct {
	// Audit is opening the audit log (and migrating its schema).
	Audit time.Duration `json:"audit_ns"`
	// Providers is starting every provider, in parallel: the longest
	// provider's steps plus the wait for the slowest.
	Providers time.Duration `json:"providers_ns"`
	// Catalog is merging the providers' catalogs into the host's.
	Catalog time.Duration `json:"catalog_ns"`
	// StateKey is reading or making the key that seals request state.
	StateKey time.Duration `json:"state_key_ns"`
	// Server is building the MCP server: tool index, compiled schemas.
	Server time.Duration `json:"server_ns"`
	// Rest is metrics, warnings and the status file.
	Rest time.Duration `json:"rest_ns"`
}

// providerSteps are the steps of one provider's start as the host logs
// them with "provider loaded".
type providerSteps struct {
	// Checksum is hashing a third-party executable against its sha256.
	Checksum time.Duration `json:"checksum_ns"`
	// Handshake is starting the process until go-plugin's handshake
	// completes: exec, the provider's init, both sides' automatic mTLS
	// certificates, and the gRPC connection.
	Handshake time.Duration `json:"handshake_ns"`
	Configure time.Duration `json:"configure_ns"`
	Describe  time.Duration `json:"describe_ns"`
}

var (
	logField       = regexp.MustCompile(`([a-z_]+)=("[^"]*"|\S+)`)
	providerLogger = regexp.MustCompile(`openhuman-host\.provider\.([a-zA-Z0-9_-]+): provider loaded:`)
)

// measureBreakdown launches t once with debug logging and reads where its
// cold start went.
func measureBreakdown(ctx context.Context, t *target) (*breakdown, error) {
	dt := *t
	base := t.command
	dt.command = func() *exec.Cmd {
		c := base()
		c.Env = append(slices.Clone(c.Env), "OPENHUMAN_LOG_LEVEL=debug")
		return c
	}
	r, total, err := dt.start(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.close(); err != nil {
		return nil, fmt.Errorf("%s: exit: %w%s", t.name, err, r.stderr.suffix())
	}
	return parseBreakdown(r.stderr.String(), total)
}

// parseBreakdown reads the host's debug log.
func parseBreakdown(log string, total time.Duration) (*breakdown, error) {
	b := &breakdown{Total: total, Steps: map[string]providerSteps{}}
	var loaded time.Duration
	for _, line := range strings.Split(log, "\n") {
		fields := map[string]string{}
		for _, m := range logField.FindAllStringSubmatch(line, -1) {
			fields[m[1]] = strings.Trim(m[2], `"`)
		}
		dur := func(k string) time.Duration {
			d, _ := time.ParseDuration(fields[k])
			return d
		}
		switch {
		case strings.Contains(line, "openhuman-host: starting the host:"):
			b.Init = dur("since_start")
		case strings.Contains(line, "openhuman-host: providers loaded:"):
			loaded = dur("since_start")
		case strings.Contains(line, "openhuman-host: host started:"):
			b.Host = hostSteps{Audit: dur("audit"), Providers: dur("providers"), Catalog: dur("catalog"),
				StateKey: dur("state_key"), Server: dur("server"), Rest: dur("rest")}
		default:
			if m := providerLogger.FindStringSubmatch(line); m != nil {
				b.Steps[m[1]] = providerSteps{Checksum: dur("checksum"), Handshake: dur("handshake"),
					Configure: dur("configure"), Describe: dur("describe")}
			}
		}
	}
	if b.Init == 0 || loaded == 0 {
		return nil, fmt.Errorf("the host's debug log has no \"starting the host\" or \"providers loaded\" line with since_start")
	}
	b.Providers = loaded - b.Init
	return b, nil
}

// print writes the breakdown as one paragraph.
func (b *breakdown) print(w io.Writer) {
	fmt.Fprintf(w, "\ncold start of %s, one launch with debug logging: %s to tools/list =\n", defaultsTarget, fmtMs(b.Total))
	fmt.Fprintf(w, "  %s init (from Go's package initialization: config, logging)\n", fmtMs(b.Init))
	fmt.Fprintf(w, "  + %s starting the host (audit log, providers in parallel, catalog, server):\n", fmtMs(b.Providers))
	if h := b.Host; h != (hostSteps{}) {
		fmt.Fprintf(w, "      host: audit log %s, providers %s, catalog %s, state key %s, MCP server %s, the rest %s\n",
			fmtMs(h.Audit), fmtMs(h.Providers), fmtMs(h.Catalog), fmtMs(h.StateKey), fmtMs(h.Server), fmtMs(h.Rest))
	}
	for _, name := range slices.Sorted(maps.Keys(b.Steps)) {
		s := b.Steps[name]
		fmt.Fprintf(w, "      %s: checksum %s, process start and go-plugin handshake (mTLS) %s, Configure %s, Describe %s\n",
			name, fmtMs(s.Checksum), fmtMs(s.Handshake), fmtMs(s.Configure), fmtMs(s.Describe))
	}
	fmt.Fprintf(w, "  + %s the rest (exec and Go's runtime start before package initialization; initialize and tools/list)\n", fmtMs(b.Total-b.Init-b.Providers))
}
