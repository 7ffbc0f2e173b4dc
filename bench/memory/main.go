// Command memory benchmarks the memory provider in-process: import
// throughput, [memorytool.Search] and [memorytool.Recall] latency, and
// database size, as the store grows over a generated corpus.
//
// Run it from the module with the FTS5 build tag:
//
//	go run -tags sqlite_fts5 ./bench/memory
//	go run -tags sqlite_fts5 ./bench/memory -sizes 1000,10000 -queries 200 -json
//	make bench-memory ARGS="-sizes 1000,10000"
//
// The corpus is generated from -seed (corpus.go): Markdown files with a
// title and paragraphs of pronounceable pseudo-words drawn from a
// vocabulary of 20,000 with a Zipf distribution, so that a few words are
// very common and most are rare, as in real text, and a low rate of e-mail
// addresses, URLs, @handles, #hashtags and ISO dates. The same seed gives
// byte-identical files.
//
// The store grows in steps to each of -sizes chunks (default 1000, 10000
// and 100000). Each step writes enough new files to reach the size and
// imports them with Provider.Import, which gives the step's import
// throughput (chunks written / elapsed). Then, at that size, it times
// -queries calls of [memorytool.Search] (k=10; 1 to 3 words, each drawn
// from the Zipf distribution, which mixes frequent and rare words) and as
// many of [memorytool.Recall] (a question of English function words around
// two vocabulary words; keyword mode, as no embedder is configured), each
// after -warmup unmeasured calls. The same queries are used at every size.
// A call's latency is that of Provider.CallTool alone: no host, no gRPC, no
// JSON-RPC. The table also gives the database's bytes per chunk
// (Stats.DBBytes, memory.db with its write-ahead log, over Stats.Chunks).
// Then the first -cold queries of each tool are timed again, each right
// after a one-chunk [memorytool.Store]: the ranking keeps each word's
// posting list until the full-text index changes, so these are the
// latencies of a memory that is written between queries.
//
// With -analyze (the default), the chunks each search query matches are
// counted after the timing with [memorytool.Browse], whose total counts the
// chunks containing every word as [memorytool.Search] matches them; the
// report then breaks search latency down by how many chunks matched and
// lists the -slowest queries with the chunks each of their words matches.
//
// The report ends with the project's goal, [memorytool.Search] p99 under 20
// ms at 100,000 chunks, as "goal met" or "goal MISSED"; it is printed,
// never asserted. The run's wall time and its peak disk use (corpus files
// plus the database) come last. Progress goes to stderr, results to stdout;
// -json also prints the results as JSON.
//
// With -quality (the default), the run first measures retrieval quality on
// a real corpus, Debian's git-doc package fetched with apt-get download
// into -cache (realcorpus.go): recall@5, precision@5 and MRR of
// [memorytool.Search], [memorytool.Recall] and a grep baseline on the
// judged queries of quality/questions.json, alone and, after the first
// size, with the real corpus imported into the generated store at every
// size; and its import against a plain SQLite + FTS5 insert of the same
// chunks, with the text stored once as the provider stores it, and also,
// for comparison with earlier runs, twice (floor.go). -quality-only
// measures the real corpus alone and stops. The quality tables are Markdown
// (quality.go).
//
// Files go to a temporary directory removed at the end, or to -dir, which
// is kept (it must be empty or not exist): its corpus/ holds the generated
// files, one directory per import, and data/ the memory.db.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/bench/internal/cputime"
	"github.com/openhuman/openhuman-host/providers/memory"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
)

// The goal the project tracks: [memorytool.Search] p99 at goalChunks.
const (
	goalChunks = 100000
	goalP99    = 20 * time.Millisecond
)

// searchK is the k of every timed call.
const searchK = 10

// maxFillRounds bounds the imports of one step: the generator predicts the
// chunks of each file, so one round is expected; more run only if the
// provider chunked differently and the store is still short of the size.
const maxFillRounds = 5

// options are the command-line flags.
type options struct {
	sizes   []int
	queries int
	warmup  int
	// cold is how many calls of each tool are timed right after a write.
	cold int
	seed uint64
	dir  string
	json bool
	// cpuprofile is where a CPU profile of the run goes, "" for none.
	cpuprofile string
	analyze    bool
	slowest    int
	// The retrieval-quality benchmark (quality.go).
	quality       bool
	qualityOnly   bool
	qualityRounds int
	importRounds  int
	qualityDetail bool
	cache         string
	// driver is the memory provider's storage: "sqlite" (memory.db) or
	// "postgres" (postgres.go).
	driver string
}

// parseSizes parses a comma-separated list of increasing chunk counts.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 10_000_000 {
			return nil, fmt.Errorf("%q: want chunk counts from 1 to 10000000, comma-separated", s)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("%q: sizes must increase", s)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q: no size given", s)
	}
	return out, nil
}

// parseFlags parses the command line; it returns flag.ErrHelp for -h.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "1000,10000,100000", "store sizes to measure at, in chunks, comma-separated and increasing")
	fs.IntVar(&o.queries, "queries", 500, "timed calls of "+memorytool.Search+", and of "+memorytool.Recall+", at each size")
	fs.IntVar(&o.warmup, "warmup", 50, "unmeasured calls before each timed series")
	fs.IntVar(&o.cold, "cold", 100, "calls of each tool timed right after a write, which empties the cache of posting lists (0: none)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the corpus and the queries")
	fs.StringVar(&o.dir, "dir", "", "directory for the corpus and the database, kept after the run (default: a temporary directory, removed)")
	fs.BoolVar(&o.json, "json", false, "also print the results as JSON")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	fs.BoolVar(&o.analyze, "analyze", true, "count the chunks each search query matches (untimed, with "+memorytool.Browse+") and report latency by match count")
	fs.IntVar(&o.slowest, "slowest", 10, "with -analyze, list this many slowest "+memorytool.Search+" queries per size")
	fs.BoolVar(&o.quality, "quality", true, "measure retrieval quality on the real corpus (Debian's git-doc), alone and mixed into the generated corpus at each size")
	fs.BoolVar(&o.qualityOnly, "quality-only", false, "measure retrieval quality on the real corpus alone and nothing else (a quick run)")
	fs.IntVar(&o.qualityRounds, "quality-rounds", 10, "timed passes over the judged questions per method and store")
	fs.IntVar(&o.importRounds, "import-rounds", 3, "imports of the real corpus into an empty store, each with a floor insert; the medians are reported")
	fs.BoolVar(&o.qualityDetail, "quality-detail", true, "list every question's reciprocal rank per method and store")
	fs.StringVar(&o.cache, "cache", defaultCache(), "directory the real corpus is downloaded to and kept in")
	fs.StringVar(&o.driver, "driver", "sqlite", "the provider's storage: sqlite (memory.db) or postgres (a throwaway PostgreSQL server, or the one $"+pgtest.EnvDSN+" names, a new database per store)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.sizes, err = parseSizes(*sizes); err != nil {
		return nil, fmt.Errorf("-sizes %w", err)
	}
	for _, f := range []struct {
		flag          string
		value, lo, hi int
	}{
		{"queries", o.queries, 1, 1_000_000},
		{"warmup", o.warmup, 0, 1_000_000},
		{"cold", o.cold, 0, 100_000},
		{"slowest", o.slowest, 0, 1000},
		{"quality-rounds", o.qualityRounds, 1, 10_000},
		{"import-rounds", o.importRounds, 1, 100},
	} {
		if f.value < f.lo || f.value > f.hi {
			return nil, fmt.Errorf("-%s %d: want %d to %d", f.flag, f.value, f.lo, f.hi)
		}
	}
	switch {
	case o.qualityOnly && !o.quality:
		return nil, errors.New("-quality-only and -quality=false contradict each other")
	case o.driver != "sqlite" && o.driver != "postgres":
		return nil, fmt.Errorf("-driver %q: want sqlite or postgres", o.driver)
	}
	return o, nil
}

// main parses the flags and runs the benchmark: exit status 2 for bad
// flags, 1 when the benchmark itself fails (never for a missed goal).
func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/memory:", err)
		os.Exit(2)
	}
	// An interrupt cancels the run, so the temporary directory is still
	// removed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if o.cpuprofile != "" {
		f, ferr := os.Create(o.cpuprofile)
		if ferr == nil {
			ferr = pprof.StartCPUProfile(f)
		}
		if ferr != nil {
			fmt.Fprintln(os.Stderr, "bench/memory: -cpuprofile:", ferr)
			os.Exit(2)
		}
		defer f.Close()
	}
	err = run(ctx, o, os.Stdout, os.Stderr)
	stop()
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/memory:", err)
		os.Exit(1)
	}
}

// latency summarises a series of call durations, in milliseconds.
type latency struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// summarize computes the nearest-rank percentiles of ds.
func summarize(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	pct := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return ms(s[max(0, min(i, len(s)-1))])
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return latency{P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), Max: ms(s[len(s)-1]), Mean: ms(sum / time.Duration(len(s)))}
}

// ms converts d to fractional milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// perChunk is bytes per chunk of a store: 0 when it holds no chunks.
func perChunk[N int | int64](bytes int64, chunks N) float64 {
	if chunks <= 0 {
		return 0
	}
	return float64(bytes) / float64(chunks)
}

// slowQuery is one of the slowest [memorytool.Search] calls of a size.
type slowQuery struct {
	Query string  `json:"query"`
	MS    float64 `json:"ms"`
	// Returned counts the hits the call returned (at most k).
	Returned int `json:"returned"`
	// Matched counts every chunk containing all the query's words.
	Matched int64 `json:"matched"`
	// WordMatched counts, for each word of the query in order, the chunks
	// containing it.
	WordMatched []int64 `json:"word_matched"`
}

// matchBucket is the search latency of the queries that matched between
// Min and Max chunks.
type matchBucket struct {
	Min     int64   `json:"min_matched"`
	Max     int64   `json:"max_matched"`
	Queries int     `json:"queries"`
	Latency latency `json:"latency"`
}

// sizeResult is what was measured at one store size.
type sizeResult struct {
	// Target is the size asked for; Chunks and Documents what the store
	// held when it was measured.
	Target    int   `json:"target_chunks"`
	Chunks    int64 `json:"chunks"`
	Documents int64 `json:"documents"`
	// ImportFiles and ImportChunks are what this step's imports added, in
	// ImportSeconds.
	ImportFiles        int     `json:"import_files"`
	ImportChunks       int     `json:"import_chunks"`
	ImportSeconds      float64 `json:"import_seconds"`
	ImportChunksPerSec float64 `json:"import_chunks_per_sec"`
	Search             latency `json:"search"`
	// SearchHits counts the timed search queries that returned at least
	// one chunk, out of Queries.
	SearchHits int     `json:"search_hits"`
	Recall     latency `json:"recall"`
	RecallHits int     `json:"recall_hits"`
	// SearchCold and RecallCold time the first -cold queries again, each
	// right after a one-chunk write: the full-text index changed, so the
	// posting lists the ranking keeps are read again.
	SearchCold latency `json:"search_after_write"`
	RecallCold latency `json:"recall_after_write"`
	Queries    int     `json:"queries"`
	// SearchCPU and RecallCPU are the process's CPU time per timed call,
	// in milliseconds: unlike latency, they do not grow when other
	// processes keep the CPUs busy.
	SearchCPU float64 `json:"search_cpu_ms_per_call"`
	RecallCPU float64 `json:"recall_cpu_ms_per_call"`
	// DBBytes is memory.db with its write-ahead log.
	DBBytes       int64         `json:"db_bytes"`
	BytesPerChunk float64       `json:"bytes_per_chunk"`
	ByMatched     []matchBucket `json:"by_matched,omitempty"`
	Slowest       []slowQuery   `json:"slowest,omitempty"`
}

// results is the whole run.
type results struct {
	Seed uint64 `json:"seed"`
	// Driver is the provider's storage, sqlite or postgres.
	Driver string `json:"driver"`
	// LoadStart and LoadEnd are the machine's 1-minute load average when
	// the run started and ended, from /proc/loadavg ("" when unreadable).
	LoadStart string        `json:"load_start"`
	LoadEnd   string        `json:"load_end"`
	Queries   int           `json:"queries"`
	Warmup    int           `json:"warmup"`
	Sizes     []*sizeResult `json:"sizes"`
	// Goal says whether [memorytool.Search] p99 was under 20 ms at 100,000
	// chunks: "met", "missed" or "not measured".
	Goal        string  `json:"goal"`
	WallSeconds float64 `json:"wall_seconds"`
	// PeakDiskBytes is the most the corpus files and the database took at
	// once; PeakDBBytes the database's part then.
	PeakDiskBytes int64 `json:"peak_disk_bytes"`
	PeakDBBytes   int64 `json:"peak_db_bytes"`
	CorpusBytes   int64 `json:"corpus_bytes"`
	// Quality is the retrieval-quality benchmark on the real corpus.
	Quality *qualityResults `json:"quality,omitempty"`
}

// bench holds the state of one run.
type bench struct {
	o       *options
	p       *memory.Provider
	stderr  io.Writer
	workDir string
	dbPath  string
	// corpusBytes counts the bytes of the files written so far;
	// peakDisk and peakDB track the most disk the run used.
	corpusBytes int64
	peakDisk    int64
	peakDB      int64
	// logger and now are what every provider of the run is made with.
	logger hclog.Logger
	now    func() time.Time
	// pg is the PostgreSQL server of -driver postgres, nil with SQLite.
	pg *pgServer
}

// run runs the benchmark and prints its report to stdout.
func run(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	start := time.Now()
	workDir, cleanup, err := prepareDir(o.dir)
	if err != nil {
		return err
	}
	defer cleanup()
	dataDir := filepath.Join(workDir, "data")

	// A clock that starts at a fixed time and ticks a millisecond per
	// reading keeps timestamps, and so tie-breaking by recency, the same
	// from run to run.
	var ticks atomic.Int64
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := &bench{o: o, stderr: stderr, workDir: workDir, dbPath: filepath.Join(dataDir, "memory.db"),
		logger: hclog.NewNullLogger(),
		now:    func() time.Time { return epoch.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }}
	res := &results{Seed: o.seed, Queries: o.queries, Warmup: o.warmup, LoadStart: loadAverage(), Driver: o.driver}
	if o.driver == "postgres" {
		if b.pg, err = startPostgres(ctx, b.logf); err != nil {
			return err
		}
		defer b.pg.stop()
	}

	// The real corpus first, alone in its own store.
	var q *quality
	if o.quality {
		if q, err = b.prepareQuality(ctx); err != nil {
			return err
		}
		res.Quality = q.res
		rp, err := b.importReal(ctx, q)
		if err != nil {
			return err
		}
		err = b.evaluate(ctx, q, rp, "git-doc alone", true)
		rp.Close()
		if err != nil {
			return err
		}
	}

	if !o.qualityOnly {
		if err := b.scale(ctx, res, q); err != nil {
			return err
		}
	}
	res.Goal = "not measured"
	for _, r := range res.Sizes {
		if r.Target == goalChunks {
			res.Goal = "missed"
			if r.Search.P99 < ms(goalP99) {
				res.Goal = "met"
			}
		}
	}
	res.WallSeconds = time.Since(start).Seconds()
	res.LoadEnd = loadAverage()
	res.PeakDiskBytes, res.PeakDBBytes, res.CorpusBytes = b.peakDisk, b.peakDB, b.corpusBytes

	if !o.qualityOnly {
		report(stdout, res, o)
	} else {
		fmt.Fprintf(stdout, "memory provider, in-process, retrieval quality only; wall time %s, load average %s at start, %s at end\n",
			time.Duration(res.WallSeconds*float64(time.Second)).Round(time.Second), res.LoadStart, res.LoadEnd)
	}
	if q != nil {
		reportQuality(stdout, q.res, q.qs, o.qualityDetail)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	if o.dir != "" {
		fmt.Fprintf(stderr, "bench/memory: corpus and database kept in %s\n", workDir)
	}
	return nil
}

// scale runs the generated corpus's steps to each size in one store, timing
// [memorytool.Search] and [memorytool.Recall] at each. With q, the real
// corpus is imported into the same store right after the first size is
// measured (so the generated documents of later steps are newer than it, as
// distractors written later would be) and its questions are measured at
// every size.
func (b *bench) scale(ctx context.Context, res *results, q *quality) error {
	p, err := b.newProvider(ctx, filepath.Dir(b.dbPath))
	if err != nil {
		return err
	}
	defer p.Close()
	b.p = p
	o := b.o

	qs := NewQueries(o.seed)
	searchWarm, searchQ := make([]string, o.warmup), make([]string, o.queries)
	recallWarm, recallQ := make([]string, o.warmup), make([]string, o.queries)
	for _, list := range [][]string{searchWarm, searchQ} {
		for i := range list {
			list[i] = qs.Search()
		}
	}
	for _, list := range [][]string{recallWarm, recallQ} {
		for i := range list {
			list[i] = qs.Recall()
		}
	}

	gen := NewGenerator(o.seed)
	for step, target := range o.sizes {
		r := &sizeResult{Target: target, Queries: o.queries}
		res.Sizes = append(res.Sizes, r)
		if err := b.grow(ctx, gen, step+1, r); err != nil {
			return err
		}
		if err := b.measure(ctx, r, searchWarm, searchQ, recallWarm, recallQ); err != nil {
			return err
		}
		if q == nil {
			continue
		}
		if step == 0 {
			b.logf("importing the real corpus into the generated store")
			sum, err := b.importDir(ctx, q.corpus.Root)
			if err != nil {
				return err
			}
			b.logf("real corpus: %d chunks in %s", sum.Chunks, sum.Elapsed.Round(time.Millisecond))
		}
		if err := b.evaluate(ctx, q, p, fmt.Sprintf("git-doc + generated (size %d)", target), false); err != nil {
			return err
		}
	}
	return nil
}

// defaultCache is where the real corpus is kept between runs: the user's
// cache directory, else the temporary directory.
func defaultCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "openhuman-host", "bench-memory")
	}
	return filepath.Join(os.TempDir(), "openhuman-host-bench-memory")
}

// prepareDir returns the working directory and what removes it: dir when
// given (created if missing, refused when not empty, kept), else a new
// temporary directory.
func prepareDir(dir string) (string, func(), error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "openhuman-bench-memory-")
		if err != nil {
			return "", nil, err
		}
		return tmp, func() { os.RemoveAll(tmp) }, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", nil, err
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return "", nil, err
	}
	if len(entries) > 0 {
		return "", nil, fmt.Errorf("-dir %s is not empty: give an empty or new directory", abs)
	}
	return abs, func() {}, nil
}

// logf writes a progress line to stderr.
func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.stderr, "bench/memory: "+format+"\n", args...)
}

// sampleDisk records the disk the corpus and the database use now.
func (b *bench) sampleDisk() {
	var db int64
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if info, err := os.Stat(b.dbPath + suffix); err == nil {
			db += info.Size()
		}
	}
	if b.pg != nil && b.p != nil {
		if st, err := b.p.Stats(context.Background()); err == nil {
			db = st.DBBytes
		}
	}
	if total := b.corpusBytes + db; total > b.peakDisk {
		b.peakDisk, b.peakDB = total, db
	}
}

// grow writes and imports files until the store holds r.Target chunks.
func (b *bench) grow(ctx context.Context, gen *Generator, step int, r *sizeResult) error {
	st, err := b.p.Stats(ctx)
	if err != nil {
		return err
	}
	var elapsed time.Duration
	for round := 1; st.Chunks < int64(r.Target); round++ {
		if round > maxFillRounds {
			return fmt.Errorf("the store holds %d chunks after %d imports, short of %d", st.Chunks, maxFillRounds, r.Target)
		}
		need := int(int64(r.Target) - st.Chunks)
		dir := filepath.Join(b.workDir, "corpus", fmt.Sprintf("step-%d", step))
		if round > 1 {
			dir += fmt.Sprintf("-%d", round)
		}
		files, predicted, err := b.writeFiles(ctx, gen, dir, need)
		if err != nil {
			return err
		}
		b.logf("step %d: importing %d files (%d chunks predicted) toward %d chunks", step, files, predicted, r.Target)
		sum, err := b.importDir(ctx, dir)
		if err != nil {
			return err
		}
		if len(sum.Skipped) > 0 {
			return fmt.Errorf("import skipped %d files, such as %s: %s", len(sum.Skipped), sum.Skipped[0].Path, sum.Skipped[0].Reason)
		}
		r.ImportFiles += sum.Written
		r.ImportChunks += sum.Chunks
		elapsed += sum.Elapsed
		if sum.Chunks != predicted {
			b.logf("step %d: the provider made %d chunks of files predicted to make %d", step, sum.Chunks, predicted)
		}
		if st, err = b.p.Stats(ctx); err != nil {
			return err
		}
	}
	r.ImportSeconds = elapsed.Seconds()
	if elapsed > 0 {
		r.ImportChunksPerSec = float64(r.ImportChunks) / elapsed.Seconds()
	}
	b.logf("step %d: %d chunks in the store; this step imported %d chunks in %s (%.0f chunks/s)",
		step, st.Chunks, r.ImportChunks, elapsed.Round(time.Millisecond), r.ImportChunksPerSec)
	return nil
}

// writeFiles writes the generator's next documents under dir until they
// make at least need chunks, and returns how many files and predicted
// chunks it wrote.
func (b *bench) writeFiles(ctx context.Context, gen *Generator, dir string, need int) (files, chunks int, err error) {
	start := time.Now()
	made := map[string]bool{}
	for chunks < need {
		if err := ctx.Err(); err != nil {
			return files, chunks, err
		}
		doc := gen.Next()
		path := filepath.Join(dir, filepath.FromSlash(doc.Name))
		if sub := filepath.Dir(path); !made[sub] {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return files, chunks, err
			}
			made[sub] = true
		}
		if err := os.WriteFile(path, []byte(doc.Text), 0o644); err != nil {
			return files, chunks, err
		}
		files++
		chunks += doc.Chunks
		b.corpusBytes += int64(len(doc.Text))
	}
	b.logf("wrote %d files in %s", files, time.Since(start).Round(time.Millisecond))
	b.sampleDisk()
	return files, chunks, nil
}

// importDir imports dir, reporting progress to stderr every few seconds.
func (b *bench) importDir(ctx context.Context, dir string) (memory.ImportSummary, error) {
	last := time.Now()
	sum, err := b.p.Import(ctx, []string{dir}, &memory.ImportOptions{Progress: func(pr memory.ImportProgress) {
		b.sampleDisk()
		if time.Since(last) >= 5*time.Second {
			last = time.Now()
			b.logf("  import: %d/%d files, %d chunks", pr.Done, pr.Total, pr.Chunks)
		}
	}})
	b.sampleDisk()
	if err != nil {
		return sum, fmt.Errorf("import %s: %w", dir, err)
	}
	return sum, nil
}

// call runs tool with query and k=searchK, and returns how long CallTool
// took and how many chunks it returned.
func (b *bench) call(ctx context.Context, tool, query string) (time.Duration, int, error) {
	args, err := json.Marshal(map[string]any{"query": query, "k": searchK})
	if err != nil {
		return 0, 0, err
	}
	req := &sdk.CallToolRequest{Name: tool, Arguments: args}
	start := time.Now()
	res, err := b.p.CallTool(ctx, req)
	d := time.Since(start)
	if err != nil {
		return d, 0, fmt.Errorf("%s %q: %w", tool, query, err)
	}
	if res.IsError {
		return d, 0, fmt.Errorf("%s %q: %s", tool, query, res.Text())
	}
	var out struct {
		Chunks []json.RawMessage `json:"chunks"`
	}
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		return d, 0, fmt.Errorf("%s %q: structured content: %w", tool, query, err)
	}
	return d, len(out.Chunks), nil
}

// timing is what one series of calls measured.
type timing struct {
	ds   []time.Duration // every timed call's latency
	hits []int           // every timed call's hits
	cpu  float64         // the process's CPU time per timed call, in ms
}

// summary returns the latencies' summary, how many calls had hits, and the
// CPU time per call.
func (t timing) summary() (latency, int, float64) {
	return summarize(t.ds), countNonZero(t.hits), t.cpu
}

// series logs and times tool over queries after the warm-up calls, with
// chunks chunks stored.
func (b *bench) series(ctx context.Context, chunks int64, tool string, warm, queries []string) (timing, error) {
	b.logf("at %d chunks: %d "+tool+" calls after %d warm-up calls", chunks, len(queries), len(warm))
	for _, q := range warm {
		if _, _, err := b.call(ctx, tool, q); err != nil {
			return timing{}, err
		}
	}
	t := timing{ds: make([]time.Duration, len(queries)), hits: make([]int, len(queries))}
	cpu0 := cputime.Self()
	for i, q := range queries {
		d, n, err := b.call(ctx, tool, q)
		if err != nil {
			return timing{}, err
		}
		t.ds[i], t.hits[i] = d, n
	}
	t.cpu = ms(cputime.Self()-cpu0) / float64(len(queries))
	return t, nil
}

// coldSeries times tool over queries, each right after an untimed
// [memorytool.Store] that replaces one small document, so that every query
// finds the full-text index changed since the last.
func (b *bench) coldSeries(ctx context.Context, tool string, queries []string) (latency, error) {
	ds := make([]time.Duration, len(queries))
	for i, q := range queries {
		args, err := json.Marshal(map[string]any{"namespace": "bench-cold", "title": "Cold", "content": fmt.Sprintf("write number %d", i)})
		if err != nil {
			return latency{}, err
		}
		res, err := b.p.CallTool(ctx, &sdk.CallToolRequest{Name: memorytool.Store, Arguments: args})
		if err != nil {
			return latency{}, fmt.Errorf("%s: %w", memorytool.Store, err)
		}
		if res.IsError {
			return latency{}, fmt.Errorf("%s: %s", memorytool.Store, res.Text())
		}
		if ds[i], _, err = b.call(ctx, tool, q); err != nil {
			return latency{}, err
		}
	}
	return summarize(ds), nil
}

// loadAverage returns the machine's 1-minute load average, or "" when
// /proc/loadavg cannot be read.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	if f := strings.Fields(string(data)); len(f) > 0 {
		return f[0]
	}
	return ""
}

// countNonZero counts the elements of ns above zero.
func countNonZero(ns []int) int {
	c := 0
	for _, n := range ns {
		if n > 0 {
			c++
		}
	}
	return c
}

// measure times [memorytool.Search] and [memorytool.Recall] at the store's
// current size, records its size on disk and, with -analyze, explains the
// search latencies by the chunks each query matched.
func (b *bench) measure(ctx context.Context, r *sizeResult, searchWarm, searchQ, recallWarm, recallQ []string) error {
	st, err := b.p.Stats(ctx)
	if err != nil {
		return err
	}
	r.Chunks, r.Documents, r.DBBytes = st.Chunks, st.Documents, st.DBBytes
	r.BytesPerChunk = perChunk(st.DBBytes, st.Chunks)
	b.sampleDisk()

	search, err := b.series(ctx, r.Chunks, memorytool.Search, searchWarm, searchQ)
	if err != nil {
		return err
	}
	r.Search, r.SearchHits, r.SearchCPU = search.summary()
	recall, err := b.series(ctx, r.Chunks, memorytool.Recall, recallWarm, recallQ)
	if err != nil {
		return err
	}
	r.Recall, r.RecallHits, r.RecallCPU = recall.summary()
	if n := min(b.o.cold, len(searchQ)); n > 0 {
		b.logf("at %d chunks: %d "+memorytool.Search+" and %d "+memorytool.Recall+" calls, each after a write", r.Chunks, n, n)
		if r.SearchCold, err = b.coldSeries(ctx, memorytool.Search, searchQ[:n]); err != nil {
			return err
		}
		if r.RecallCold, err = b.coldSeries(ctx, memorytool.Recall, recallQ[:min(n, len(recallQ))]); err != nil {
			return err
		}
	}
	if b.o.analyze {
		return b.analyze(ctx, r, searchQ, search.ds, search.hits)
	}
	return nil
}

// matched counts the chunks containing every word of query, as
// [memorytool.Search] matches them, with [memorytool.Browse]'s total.
func (b *bench) matched(ctx context.Context, query string) (int64, error) {
	args, err := json.Marshal(map[string]any{"query": query, "k": 1})
	if err != nil {
		return 0, err
	}
	res, err := b.p.CallTool(ctx, &sdk.CallToolRequest{Name: memorytool.Browse, Arguments: args})
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", memorytool.Browse, query, err)
	}
	if res.IsError {
		return 0, fmt.Errorf("%s %q: %s", memorytool.Browse, query, res.Text())
	}
	var out struct {
		Total *int64 `json:"total"`
	}
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil || out.Total == nil {
		return 0, fmt.Errorf("%s %q: no total in %.200s", memorytool.Browse, query, res.StructuredContent)
	}
	return *out.Total, nil
}

// bucketBounds are the lower bounds of the match-count buckets.
var bucketBounds = []int64{0, 1, 10, 100, 1000, 10000, 100000, 1000000}

// analyze counts the chunks each search query matched and fills
// r.ByMatched and r.Slowest.
func (b *bench) analyze(ctx context.Context, r *sizeResult, queries []string, ds []time.Duration, hits []int) error {
	start := time.Now()
	b.logf("at %d chunks: counting the chunks each search query matches ("+memorytool.Browse+", untimed)", r.Chunks)
	counts := map[string]int64{}
	count := func(q string) (int64, error) {
		if n, ok := counts[q]; ok {
			return n, nil
		}
		n, err := b.matched(ctx, q)
		counts[q] = n
		return n, err
	}
	matched := make([]int64, len(queries))
	for i, q := range queries {
		n, err := count(q)
		if err != nil {
			return err
		}
		matched[i] = n
	}
	for i, lo := range bucketBounds {
		hi := int64(math.MaxInt64)
		if i+1 < len(bucketBounds) {
			hi = bucketBounds[i+1] - 1
		}
		var in []time.Duration
		for j, n := range matched {
			if n >= lo && n <= hi {
				in = append(in, ds[j])
			}
		}
		if len(in) > 0 {
			r.ByMatched = append(r.ByMatched, matchBucket{Min: lo, Max: hi, Queries: len(in), Latency: summarize(in)})
		}
	}
	order := make([]int, len(queries))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return -compareDurations(ds[x], ds[y]) })
	for _, i := range order[:min(b.o.slowest, len(order))] {
		sq := slowQuery{Query: queries[i], MS: ms(ds[i]), Returned: hits[i], Matched: matched[i]}
		for _, w := range strings.Fields(queries[i]) {
			n, err := count(w)
			if err != nil {
				return err
			}
			sq.WordMatched = append(sq.WordMatched, n)
		}
		r.Slowest = append(r.Slowest, sq)
	}
	b.logf("at %d chunks: counted in %s", r.Chunks, time.Since(start).Round(time.Millisecond))
	return nil
}

// compareDurations orders durations ascending.
func compareDurations(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// report prints the results table, the goal, the wall time and peak disk
// use and, with -analyze, the latency analysis.
func report(w io.Writer, res *results, o *options) {
	fmt.Fprintf(w, "memory provider, in-process, on %s: seed %d, %d timed calls per tool and size after %d warm-up, k=%d\n\n",
		res.Driver, res.Seed, res.Queries, res.Warmup, searchK)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "chunks\timport_chunks/s\tsearch_p50\tsearch_p90\tsearch_p99\tsearch_max\thits%\trecall_p50\trecall_p99\tafter_write_search_p50\tp99\tafter_write_recall_p50\tp99\tbytes/chunk\t")
	for _, r := range res.Sizes {
		fmt.Fprintf(tw, "%d\t%.0f\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t\n",
			r.Chunks, r.ImportChunksPerSec,
			fmtMS(r.Search.P50), fmtMS(r.Search.P90), fmtMS(r.Search.P99), fmtMS(r.Search.Max),
			100*float64(r.SearchHits)/float64(r.Queries),
			fmtMS(r.Recall.P50), fmtMS(r.Recall.P99),
			fmtMS(r.SearchCold.P50), fmtMS(r.SearchCold.P99), fmtMS(r.RecallCold.P50), fmtMS(r.RecallCold.P99), r.BytesPerChunk)
	}
	tw.Flush()

	fmt.Fprintln(w)
	switch res.Goal {
	case "met", "missed":
		for _, r := range res.Sizes {
			if r.Target == goalChunks {
				verdict := "goal met"
				if res.Goal == "missed" {
					verdict = "goal MISSED"
				}
				fmt.Fprintf(w, "search p99 < %d ms at %d chunks: %s (p99 %s at %d chunks)\n",
					goalP99.Milliseconds(), goalChunks, verdict, fmtMS(r.Search.P99), r.Chunks)
			}
		}
	default:
		fmt.Fprintf(w, "search p99 < %d ms at %d chunks: not measured (add %d to -sizes)\n",
			goalP99.Milliseconds(), goalChunks, goalChunks)
	}
	fmt.Fprintf(w, "wall time %s; peak disk %s (corpus files %s, database %s); load average %s at start, %s at end\n",
		(time.Duration(res.WallSeconds * float64(time.Second))).Round(time.Second),
		mib(res.PeakDiskBytes), mib(res.CorpusBytes), mib(res.PeakDBBytes), res.LoadStart, res.LoadEnd)
	for _, r := range res.Sizes {
		fmt.Fprintf(w, "CPU time per call at %d chunks: search %s, recall %s (mean latency: search %s, recall %s)\n",
			r.Chunks, fmtMS(r.SearchCPU), fmtMS(r.RecallCPU), fmtMS(r.Search.Mean), fmtMS(r.Recall.Mean))
	}

	if !o.analyze {
		return
	}
	for _, r := range res.Sizes {
		fmt.Fprintf(w, "\nmemory.search latency by chunks matched, at %d chunks:\n", r.Chunks)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "matched\tqueries\tp50\tp99\tmax\t")
		for _, bk := range r.ByMatched {
			span := fmt.Sprintf("%d-%d", bk.Min, bk.Max)
			switch {
			case bk.Min == bk.Max:
				span = strconv.FormatInt(bk.Min, 10)
			case bk.Max == math.MaxInt64:
				span = fmt.Sprintf("%d+", bk.Min)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t\n", span, bk.Queries, fmtMS(bk.Latency.P50), fmtMS(bk.Latency.P99), fmtMS(bk.Latency.Max))
		}
		tw.Flush()
		if len(r.Slowest) == 0 {
			continue
		}
		fmt.Fprintf(w, "slowest %d "+memorytool.Search+" calls at %d chunks (matched: chunks with every word; per word: chunks with each word):\n", len(r.Slowest), r.Chunks)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "latency\treturned\tmatched\tper word\tquery")
		for _, s := range r.Slowest {
			per := make([]string, len(s.WordMatched))
			for i, n := range s.WordMatched {
				per[i] = strconv.FormatInt(n, 10)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%q\n", fmtMS(s.MS), s.Returned, s.Matched, strings.Join(per, ","), s.Query)
		}
		tw.Flush()
	}
}

// fmtMS formats milliseconds with two decimals.
func fmtMS(v float64) string { return fmt.Sprintf("%.2fms", v) }

// mib formats bytes in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
