package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openhuman/openhuman-host/bench/internal/cputime"
	"github.com/openhuman/openhuman-host/providers/memory"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk"
)

// qualityK is the k of every quality call: enough chunks for 10 distinct
// documents most of the time, as several chunks of one document often
// rank together.
const qualityK = 20

// grepMethod names the grep baseline in the report.
const grepMethod = "grep baseline"

//go:embed quality/questions.json
var questionsJSON []byte

// question is one judged query.
type question struct {
	ID string `json:"id"`
	// Kind is "natural" (a question as a person asks it) or "keyword".
	Kind  string `json:"kind"`
	Query string `json:"query"`
	// Relevant lists the documents that answer the query, by path
	// relative to the corpus root.
	Relevant []string `json:"relevant"`
}

// questionSet is quality/questions.json.
type questionSet struct {
	Corpus    string     `json:"corpus"`
	Questions []question `json:"questions"`
}

// loadQuestions parses and checks the judged questions.
func loadQuestions(data []byte) (*questionSet, error) {
	var qs questionSet
	if err := json.Unmarshal(data, &qs); err != nil {
		return nil, fmt.Errorf("quality/questions.json: %w", err)
	}
	ids := map[string]bool{}
	for _, q := range qs.Questions {
		switch {
		case q.ID == "" || ids[q.ID]:
			return nil, fmt.Errorf("quality/questions.json: question id %q empty or repeated", q.ID)
		case q.Kind != "natural" && q.Kind != "keyword":
			return nil, fmt.Errorf("quality/questions.json: %s: kind %q, want natural or keyword", q.ID, q.Kind)
		case strings.TrimSpace(q.Query) == "":
			return nil, fmt.Errorf("quality/questions.json: %s: empty query", q.ID)
		case len(q.Relevant) == 0:
			return nil, fmt.Errorf("quality/questions.json: %s: no relevant document", q.ID)
		}
		ids[q.ID] = true
	}
	if len(qs.Questions) == 0 {
		return nil, fmt.Errorf("quality/questions.json: no questions")
	}
	return &qs, nil
}

// queryOutcome is how one method did on one question.
type queryOutcome struct {
	ID     string `json:"id"`
	Scores scores `json:"scores"`
	// Top holds the first 5 distinct documents returned, relative to the
	// corpus root, or the document id of a distractor.
	Top []string `json:"top"`
}

// methodQuality is how one method (a tool or the grep baseline) did on
// every question in one store.
type methodQuality struct {
	Method  string `json:"method"`
	All     scores `json:"all"`
	Natural scores `json:"natural"`
	Keyword scores `json:"keyword"`
	// NoResult counts the questions for which nothing came back.
	NoResult int `json:"no_result"`
	// Latency is over every timed call: each question, -quality-rounds
	// times.
	Latency  latency        `json:"latency"`
	CPU      float64        `json:"cpu_ms_per_call"`
	PerQuery []queryOutcome `json:"per_query"`
}

// qualityStage is the quality measured in one store.
type qualityStage struct {
	Label     string           `json:"label"`
	Chunks    int64            `json:"chunks"`
	Documents int64            `json:"documents"`
	Methods   []*methodQuality `json:"methods"`
}

// importQuality is the import of the real corpus into an empty store
// against the floor, each the median of several rounds. The floor keeps
// the text once, as the provider does (floorTextOnce); the FloorTwice
// fields are those of the floor with the text twice (floorTextTwice), the
// one imports were measured against before.
type importQuality struct {
	Rounds             int     `json:"rounds"`
	Files              int     `json:"files"`
	Chunks             int     `json:"chunks"`
	ImportSeconds      float64 `json:"import_seconds"`
	ImportChunksPerSec float64 `json:"import_chunks_per_sec"`
	FloorSeconds       float64 `json:"floor_seconds"`
	FloorChunksPerSec  float64 `json:"floor_chunks_per_sec"`
	// ImportOverFloor is the import's time over the floor's.
	ImportOverFloor    float64 `json:"import_over_floor"`
	BytesPerChunk      float64 `json:"bytes_per_chunk"`
	FloorBytesPerChunk float64 `json:"floor_bytes_per_chunk"`

	FloorTwiceSeconds       float64 `json:"floor_text_twice_seconds"`
	FloorTwiceChunksPerSec  float64 `json:"floor_text_twice_chunks_per_sec"`
	ImportOverFloorTwice    float64 `json:"import_over_floor_text_twice"`
	FloorTwiceBytesPerChunk float64 `json:"floor_text_twice_bytes_per_chunk"`
	// FloorFromStore says whether the floor inserted the chunks read back
	// from the provider's database (true) or an approximation.
	FloorFromStore bool `json:"floor_from_store"`
}

// qualityResults is the retrieval-quality part of a run.
type qualityResults struct {
	Corpus    string          `json:"corpus"`
	Version   string          `json:"version"`
	Files     int             `json:"files"`
	Questions int             `json:"questions"`
	Natural   int             `json:"natural"`
	Keyword   int             `json:"keyword"`
	K         int             `json:"k"`
	Rounds    int             `json:"rounds"`
	Import    importQuality   `json:"import"`
	Stages    []*qualityStage `json:"stages"`
	Warnings  []string        `json:"warnings,omitempty"`
}

// quality holds what the quality benchmark needs across the run.
type quality struct {
	corpus *realCorpus
	files  []corpusFile
	qs     *questionSet
	grep   *grepIndex
	res    *qualityResults
}

// prepareQuality fetches the corpus and loads the questions, checking that
// every judged document is in the corpus.
func (b *bench) prepareQuality(ctx context.Context) (*quality, error) {
	qs, err := loadQuestions(questionsJSON)
	if err != nil {
		return nil, err
	}
	cache, err := filepath.Abs(b.o.cache)
	if err != nil {
		return nil, err
	}
	c, err := fetchCorpus(ctx, cache, b.logf)
	if err != nil {
		return nil, err
	}
	// Document ids are the absolute paths the import sees; resolve links
	// so they compare with the root.
	if c.Root, err = filepath.EvalSymlinks(c.Root); err != nil {
		return nil, err
	}
	files, err := readCorpus(c.Root)
	if err != nil {
		return nil, err
	}
	q := &quality{corpus: c, files: files, qs: qs, grep: &grepIndex{}}
	q.res = &qualityResults{
		Corpus: fmt.Sprintf("Debian %s %s (%s)", corpusPackage, c.Version, corpusSubdir), Version: c.Version,
		Files: len(files), Questions: len(qs.Questions), K: qualityK, Rounds: b.o.qualityRounds,
	}
	have := map[string]bool{}
	for _, f := range files {
		have[f.Rel] = true
		q.grep.add(f.Rel, f.Text)
	}
	for _, qq := range qs.Questions {
		if qq.Kind == "natural" {
			q.res.Natural++
		} else {
			q.res.Keyword++
		}
		for _, r := range qq.Relevant {
			if !have[r] {
				w := fmt.Sprintf("question %s: judged document %s is not in the corpus", qq.ID, r)
				q.res.Warnings = append(q.res.Warnings, w)
				b.logf("warning: %s", w)
			}
		}
	}
	b.logf("real corpus: %d files under %s", len(files), c.Root)
	return q, nil
}

// newProvider configures a memory provider over dataDir with the run's
// deterministic clock.
func (b *bench) newProvider(ctx context.Context, dataDir string) (*memory.Provider, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	p := memory.New(&memory.Options{Logger: b.logger, Now: b.now})
	req := &sdk.ConfigureRequest{Config: json.RawMessage("{}"), DataDir: dataDir}
	if b.pg != nil {
		dsn, err := b.pg.newDatabase(ctx)
		if err != nil {
			return nil, err
		}
		req.Secrets = map[string]string{memory.SecretStorageDriver: "postgres", memory.SecretStorageDSN: dsn}
	}
	if err := p.Configure(ctx, req); err != nil {
		return nil, fmt.Errorf("configure the memory provider: %w", err)
	}
	return p, nil
}

// importReal imports the real corpus into a new store -import-rounds
// times, with floor inserts of the same chunks (text once, then twice)
// after each, and returns the last store, open, for the quality
// measurement.
func (b *bench) importReal(ctx context.Context, q *quality) (*memory.Provider, error) {
	var imports, floors, floorsTwice []time.Duration
	var last *memory.Provider
	iq := &q.res.Import
	iq.Rounds = b.o.importRounds
	for round := 1; round <= b.o.importRounds; round++ {
		if last != nil {
			last.Close()
		}
		dir := filepath.Join(b.workDir, fmt.Sprintf("real-%d", round))
		p, err := b.newProvider(ctx, filepath.Join(dir, "data"))
		if err != nil {
			return nil, err
		}
		last = p
		// One round: a failure closes the round's store.
		err = func() error {
			sum, err := p.Import(ctx, []string{q.corpus.Root}, nil)
			if err != nil {
				return fmt.Errorf("import %s: %w", q.corpus.Root, err)
			}
			if len(sum.Skipped) > 0 {
				b.logf("import of the real corpus skipped %d files, such as %s: %s", len(sum.Skipped), sum.Skipped[0].Path, sum.Skipped[0].Reason)
			}
			st, err := p.Stats(ctx)
			if err != nil {
				return err
			}
			iq.Files, iq.Chunks = sum.Written, sum.Chunks
			iq.BytesPerChunk = perChunk(st.DBBytes, st.Chunks)
			imports = append(imports, sum.Elapsed)

			if b.pg != nil {
				// The floor is a plain SQLite + FTS5 insert: no baseline
				// for PostgreSQL.
				b.logf("real corpus, round %d: import %d chunks in %s", round, sum.Chunks, sum.Elapsed.Round(time.Millisecond))
				return nil
			}
			fromStore := true
			chunks, err := storedChunks(ctx, st.Path, q.corpus.Root, func() []floorChunk {
				fromStore = false
				return q.approxChunks()
			})
			if err != nil {
				return err
			}
			iq.FloorFromStore = fromStore
			fr, err := floorInsert(ctx, filepath.Join(dir, "floor.db"), chunks, floorTextOnce)
			if err != nil {
				return err
			}
			floors = append(floors, fr.Elapsed)
			iq.FloorBytesPerChunk = perChunk(fr.DBBytes, fr.Chunks)
			ft, err := floorInsert(ctx, filepath.Join(dir, "floor-text-twice.db"), chunks, floorTextTwice)
			if err != nil {
				return err
			}
			floorsTwice = append(floorsTwice, ft.Elapsed)
			iq.FloorTwiceBytesPerChunk = perChunk(ft.DBBytes, ft.Chunks)
			b.logf("real corpus, round %d: import %d chunks in %s, floor %d chunks in %s (text twice: %s)",
				round, sum.Chunks, sum.Elapsed.Round(time.Millisecond), fr.Chunks, fr.Elapsed.Round(time.Millisecond), ft.Elapsed.Round(time.Millisecond))
			if !fromStore {
				b.logf("warning: the provider's chunks could not be read back; the floor inserted an approximation of them")
			}
			b.sampleDisk()
			return nil
		}()
		if err != nil {
			p.Close()
			return nil, err
		}
	}
	imp, flo := median(imports), median(floors)
	iq.ImportSeconds, iq.FloorSeconds = imp.Seconds(), flo.Seconds()
	if imp > 0 {
		iq.ImportChunksPerSec = float64(iq.Chunks) / imp.Seconds()
	}
	if flo > 0 {
		iq.FloorChunksPerSec = float64(iq.Chunks) / flo.Seconds()
		iq.ImportOverFloor = imp.Seconds() / flo.Seconds()
	}
	if two := median(floorsTwice); two > 0 {
		iq.FloorTwiceSeconds = two.Seconds()
		iq.FloorTwiceChunksPerSec = float64(iq.Chunks) / two.Seconds()
		iq.ImportOverFloorTwice = imp.Seconds() / two.Seconds()
	}
	return last, nil
}

// approxChunks cuts the corpus files the way the provider roughly does,
// titled by file name.
func (q *quality) approxChunks() []floorChunk {
	var out []floorChunk
	for _, f := range q.files {
		title := strings.TrimSuffix(filepath.Base(f.Rel), filepath.Ext(f.Rel))
		for _, c := range splitChunks(f.Text, chunkLimit) {
			out = append(out, floorChunk{Title: title, Text: c})
		}
	}
	return out
}

// median returns the middle of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// docKey maps a hit's document id to the corpus-relative path the
// judgments use; a document outside the corpus keeps its id.
func (q *quality) docKey(id string) string {
	path, ok := strings.CutPrefix(id, "file:")
	if !ok {
		return id
	}
	rel, err := filepath.Rel(q.corpus.Root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return id
	}
	return filepath.ToSlash(rel)
}

// hitRef is the part of a hit the quality benchmark reads.
type hitRef struct {
	DocumentID string `json:"document_id"`
	ChunkID    string `json:"chunk_id"`
}

// argName returns the name of tool's text argument from its input schema:
// "query", or "question" should the tool take that instead.
func argName(ctx context.Context, p *memory.Provider, tool string) string {
	cat, err := p.Describe(ctx)
	if err != nil {
		return "query"
	}
	for _, t := range cat.Tools {
		if t.Name != tool {
			continue
		}
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(t.InputSchema, &s) == nil {
			for _, name := range []string{"query", "question"} {
				if _, ok := s.Properties[name]; ok {
					return name
				}
			}
		}
	}
	return "query"
}

// rankCall calls tool with query and k=qualityK and returns the document
// ids of the hits in order, reading the hits from "chunks" (or "hits").
func rankCall(ctx context.Context, p *memory.Provider, tool, arg, query string) ([]string, error) {
	args, err := json.Marshal(map[string]any{arg: query, "k": qualityK})
	if err != nil {
		return nil, err
	}
	res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", tool, query, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("%s %q: %s", tool, query, res.Text())
	}
	var out struct {
		Chunks []hitRef `json:"chunks"`
		Hits   []hitRef `json:"hits"`
	}
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		return nil, fmt.Errorf("%s %q: structured content: %w", tool, query, err)
	}
	hits := out.Chunks
	if len(hits) == 0 {
		hits = out.Hits
	}
	ids := make([]string, 0, len(hits))
	for _, h := range hits {
		if h.DocumentID == "" {
			return nil, fmt.Errorf("%s %q: a hit without document_id (chunk %q)", tool, query, h.ChunkID)
		}
		ids = append(ids, h.DocumentID)
	}
	return ids, nil
}

// evaluate measures every question against p's store, and the grep
// baseline when withGrep, and appends the stage to the results.
func (b *bench) evaluate(ctx context.Context, q *quality, p *memory.Provider, label string, withGrep bool) error {
	st, err := p.Stats(ctx)
	if err != nil {
		return err
	}
	stage := &qualityStage{Label: label, Chunks: st.Chunks, Documents: st.Documents}
	b.logf("quality, %s (%d chunks): %d questions, %d timed rounds", label, st.Chunks, len(q.qs.Questions), b.o.qualityRounds)
	for _, tool := range []string{memorytool.Search, memorytool.Recall} {
		arg := argName(ctx, p, tool)
		m, err := q.measureMethod(ctx, tool, b.o.qualityRounds, func(query string) ([]string, error) {
			ids, err := rankCall(ctx, p, tool, arg, query)
			if err != nil {
				return nil, err
			}
			keys := make([]string, len(ids))
			for i, id := range ids {
				keys[i] = q.docKey(id)
			}
			return keys, nil
		})
		if err != nil {
			return err
		}
		stage.Methods = append(stage.Methods, m)
	}
	if withGrep {
		m, err := q.measureMethod(ctx, grepMethod, b.o.qualityRounds, func(query string) ([]string, error) {
			return q.grep.rank(query, qualityK), nil
		})
		if err != nil {
			return err
		}
		stage.Methods = append(stage.Methods, m)
	}
	q.res.Stages = append(q.res.Stages, stage)
	return nil
}

// measureMethod scores rank on every question, then times it over rounds
// passes of every question.
func (q *quality) measureMethod(ctx context.Context, method string, rounds int, rank func(string) ([]string, error)) (*methodQuality, error) {
	m := &methodQuality{Method: method}
	var all, natural, keyword []scores
	for _, qq := range q.qs.Questions {
		ranked, err := rank(qq.Query)
		if err != nil {
			return nil, err
		}
		rel := make(map[string]bool, len(qq.Relevant))
		for _, r := range qq.Relevant {
			rel[r] = true
		}
		s := score(ranked, rel)
		all = append(all, s)
		if qq.Kind == "natural" {
			natural = append(natural, s)
		} else {
			keyword = append(keyword, s)
		}
		if len(ranked) == 0 {
			m.NoResult++
		}
		m.PerQuery = append(m.PerQuery, queryOutcome{ID: qq.ID, Scores: s, Top: topDocs(ranked, qualityCut)})
	}
	m.All, m.Natural, m.Keyword = mean(all), mean(natural), mean(keyword)
	var ds []time.Duration
	cpu0 := cputime.Self()
	for range rounds {
		for _, qq := range q.qs.Questions {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			start := time.Now()
			if _, err := rank(qq.Query); err != nil {
				return nil, err
			}
			ds = append(ds, time.Since(start))
		}
	}
	m.Latency = summarize(ds)
	if len(ds) > 0 {
		m.CPU = ms(cputime.Self()-cpu0) / float64(len(ds))
	}
	return m, nil
}

// reportQuality prints the quality results as Markdown tables.
func reportQuality(w io.Writer, r *qualityResults, qs *questionSet, detail bool) {
	fmt.Fprintf(w, "\n### Retrieval quality: %s, %d files; %d questions (%d natural, %d keyword)\n\n",
		r.Corpus, r.Files, r.Questions, r.Natural, r.Keyword)
	fmt.Fprintf(w, "k=%d chunks per call, scored on the first %d distinct documents (MRR on the first %d); latency over %d rounds of every question.\n\n",
		r.K, qualityCut, mrrCut, r.Rounds)
	fmt.Fprintln(w, "| store | chunks | method | recall@5 | precision@5 | MRR | MRR natural | MRR keyword | no result | p50 | p99 |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, st := range r.Stages {
		for _, m := range st.Methods {
			fmt.Fprintf(w, "| %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %d/%d | %s | %s |\n",
				st.Label, thousands(st.Chunks), m.Method, m.All.Recall, m.All.Precision, m.All.RR,
				m.Natural.RR, m.Keyword.RR, m.NoResult, r.Questions, fmtMS(m.Latency.P50), fmtMS(m.Latency.P99))
		}
	}
	iq := r.Import
	if iq.FloorSeconds == 0 {
		// PostgreSQL: no floor to compare with.
		fmt.Fprintf(w, "\nImport of the real corpus into an empty store, median of %d: %d files, %s chunks, %s chunks/s, %s bytes/chunk (tables and indexes).\n",
			iq.Rounds, iq.Files, thousands(int64(iq.Chunks)), thousands(int64(iq.ImportChunksPerSec)), thousands(int64(iq.BytesPerChunk)))
	} else {
		reportFloor(w, iq)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "\nwarning: %s\n", warn)
	}
	if !detail || len(r.Stages) == 0 {
		return
	}
	reportDetail(w, r, qs)
}

// reportFloor prints the import of the real corpus against the floor.
func reportFloor(w io.Writer, iq importQuality) {
	fmt.Fprintf(w, "\nImport of the real corpus into an empty store against the floor (plain SQLite table + external-content FTS5 index over it, "+
		"the text stored once; same driver, WAL, %d chunks a transaction), median of %d:\n\n", floorBatch, iq.Rounds)
	fmt.Fprintln(w, "| files | chunks | import chunks/s | floor chunks/s | import time / floor time | bytes/chunk | floor bytes/chunk |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	fmt.Fprintf(w, "| %d | %s | %s | %s | %.1f× | %s | %s |\n", iq.Files, thousands(int64(iq.Chunks)),
		thousands(int64(iq.ImportChunksPerSec)), thousands(int64(iq.FloorChunksPerSec)), iq.ImportOverFloor,
		thousands(int64(iq.BytesPerChunk)), thousands(int64(iq.FloorBytesPerChunk)))
	fmt.Fprintf(w, "\nAgainst the floor with the text twice (an FTS5 index with its own copy, the floor before): %s chunks/s, import time / floor time %.1f×, %s bytes/chunk.\n",
		thousands(int64(iq.FloorTwiceChunksPerSec)), iq.ImportOverFloorTwice, thousands(int64(iq.FloorTwiceBytesPerChunk)))
	if !iq.FloorFromStore {
		fmt.Fprintln(w, "\n(the floor inserted an approximation of the provider's chunks: they could not be read back)")
	}
}

// reportDetail lists every question's reciprocal rank per method and
// store.
func reportDetail(w io.Writer, r *qualityResults, qs *questionSet) {
	for _, st := range r.Stages {
		fmt.Fprintf(w, "\nPer question, %s (%s chunks): reciprocal rank per method, and the first document when it is not relevant.\n\n",
			st.Label, thousands(st.Chunks))
		fmt.Fprint(w, "| question | kind |")
		for _, m := range st.Methods {
			fmt.Fprintf(w, " %s |", m.Method)
		}
		fmt.Fprint(w, "\n|---|---|")
		for range st.Methods {
			fmt.Fprint(w, "---|")
		}
		fmt.Fprintln(w)
		for i, qq := range qs.Questions {
			fmt.Fprintf(w, "| %s | %s |", strings.ReplaceAll(qq.Query, "|", "\\|"), qq.Kind)
			for _, m := range st.Methods {
				o := m.PerQuery[i]
				cell := fmt.Sprintf("%.2f", o.Scores.RR)
				if len(o.Top) == 0 {
					cell += " (none)"
				} else if o.Scores.RR < 1 {
					cell += " (" + shortDoc(o.Top[0]) + ")"
				}
				fmt.Fprintf(w, " %s |", cell)
			}
			fmt.Fprintln(w)
		}
	}
}

// shortDoc shortens a distractor's document id to its file name.
func shortDoc(key string) string {
	if strings.HasPrefix(key, "file:") {
		return filepath.Base(key)
	}
	return key
}

// thousands formats n with commas.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
