package audit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/openhuman/openhuman-host/sdk"
)

// defaultLimit is Query.Limit when it is 0 or less.
const defaultLimit = 50

// Query selects records for [Log.List]. The zero value selects the 50 newest records.
type Query struct {
	// Since keeps records at or after this time. Default zero means no lower bound.
	Since time.Time
	// Tool keeps records of this tool: its advertised name, or its declared or old dotted name
	// ("notes.store"), which [sdk.ClientName] maps to the advertised one. Records written under the
	// old dotted names are kept too. Default "" means every tool.
	Tool string
	// Client keeps records whose source type or client name equals it exactly (such as
	// "mcp:claude-desktop" or "cli"). Default "" means every client.
	Client string
	// FailedOnly keeps unsuccessful records only, which include denied calls but not pending ones (their
	// outcome is unknown). Default false means all.
	FailedOnly bool
	// Limit caps the number of records returned. Default 0 (or less) means 50.
	Limit int
}

// List returns the committed records that match q, newest first (by TimeMs, then ID). Records still
// queued are not seen: call [Log.Flush] first to include them. It returns [ErrClosed] after Close.
func (l *Log) List(ctx context.Context, q Query) ([]Record, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if err := l.isOpen(); err != nil {
		return nil, fmt.Errorf("audit: list: %w", err)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	tx := l.db.WithContext(ctx).Model(&Record{})
	if !q.Since.IsZero() {
		tx = tx.Where("time_ms >= ?", q.Since.UnixMilli())
	}
	if q.Tool != "" {
		// Rows written before tool names became client-safe hold the dotted form.
		name := sdk.ClientName(q.Tool)
		tx = tx.Where("(tool = ? OR (tool LIKE '%.%' AND replace(tool, '.', '_') = ?))", name, name)
	}
	if q.Client != "" {
		tx = tx.Where("(source_type = ? OR client_name = ?)", q.Client, q.Client)
	}
	if q.FailedOnly {
		tx = tx.Where("success = ? AND pending = ?", false, false)
	}
	var out []Record
	if err := tx.Order("time_ms DESC, id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("audit: list records: %w", err)
	}
	return out, nil
}

// ToolStats summarises one tool's records for [Log.Stats].
type ToolStats struct {
	// Tool is the tool's advertised name; records written under an old dotted name ("notes.store")
	// count for the advertised one ("notes_store").
	Tool string
	// Calls counts every record of the tool: allowed and denied attempts.
	Calls int64
	// Failures counts records that were not denied, not pending and not successful.
	Failures int64
	// Pending counts act records whose outcome was never written (Record.Pending): their host stopped
	// during the call, or is running it now.
	Pending int64
	// Denied counts records the policy refused (Decision "denied:<reason>").
	Denied int64
	// P50Us is the median duration in microseconds of the records that were neither denied nor pending, by nearest
	// rank (the ceil(n/2)-th smallest); 0 when every record was denied.
	P50Us int64
	// MaxUs is the longest duration in microseconds of the records that were neither denied nor pending; 0 when every
	// record was denied.
	MaxUs int64
}

// statsSQL computes every figure in one statement, so all come from one snapshot of the table.
const statsSQL = `
WITH r AS (
	SELECT replace(tool, '.', '_') AS tool, success, duration_us, substr(decision, 1, 7) = 'denied:' AS denied, pending
	FROM ` + Table + ` WHERE time_ms >= ?
), ran AS (
	SELECT tool, duration_us,
		ROW_NUMBER() OVER (PARTITION BY tool ORDER BY duration_us) AS rn,
		COUNT(*) OVER (PARTITION BY tool) AS n
	FROM r WHERE NOT denied AND NOT pending
), agg AS (
	SELECT tool,
		COUNT(*) AS calls,
		SUM(CASE WHEN NOT denied AND NOT success AND NOT pending THEN 1 ELSE 0 END) AS failures,
		SUM(CASE WHEN pending THEN 1 ELSE 0 END) AS pending,
		SUM(CASE WHEN denied THEN 1 ELSE 0 END) AS denied,
		COALESCE(MAX(CASE WHEN NOT denied AND NOT pending THEN duration_us END), 0) AS max_us
	FROM r GROUP BY tool
)
SELECT agg.tool, agg.calls, agg.failures, agg.pending, agg.denied, COALESCE(ran.duration_us, 0), agg.max_us
FROM agg LEFT JOIN ran ON ran.tool = agg.tool AND ran.rn = (ran.n + 1) / 2
ORDER BY agg.calls DESC, agg.tool`

// Stats returns per-tool figures for the records at or after since (zero means all), most called tool
// first, ties by name. It returns [ErrClosed] after Close.
func (l *Log) Stats(ctx context.Context, since time.Time) ([]ToolStats, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if err := l.isOpen(); err != nil {
		return nil, fmt.Errorf("audit: compute stats: %w", err)
	}
	sinceMs := int64(math.MinInt64)
	if !since.IsZero() {
		sinceMs = since.UnixMilli()
	}
	rows, err := l.db.WithContext(ctx).Raw(statsSQL, sinceMs).Rows()
	if err != nil {
		return nil, fmt.Errorf("audit: compute stats: %w", err)
	}
	defer rows.Close()
	var out []ToolStats
	for rows.Next() {
		var s ToolStats
		if err := rows.Scan(&s.Tool, &s.Calls, &s.Failures, &s.Pending, &s.Denied, &s.P50Us, &s.MaxUs); err != nil {
			return nil, fmt.Errorf("audit: compute stats: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: compute stats: %w", err)
	}
	return out, nil
}
