package audit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/openhuman/openhuman-host/sdk"
)

// Defaults and bounds of [FollowOptions].
const (
	// DefaultFollowEvery is FollowOptions.Every when it is 0.
	DefaultFollowEvery = time.Second
	// MinFollowEvery is the shortest poll interval [Log.Follow] accepts.
	MinFollowEvery = 10 * time.Millisecond
	// MaxFollowEvery is the longest poll interval [Log.Follow] accepts.
	MaxFollowEvery = time.Minute
	// followBatch caps the rows one poll reads; the rest come with the
	// next poll, at once.
	followBatch = 1000
	// followGapWait is how long a hole in the IDs below the newest row
	// seen is watched for: on PostgreSQL, transactions of several writers
	// commit out of ID order, so a row with a smaller ID may appear after
	// a larger one; a hole that stays empty this long was a rolled-back
	// insert (a refused act) and is forgotten.
	followGapWait = time.Minute
	// maxFollowWatch caps the holes and pending rows a follower watches;
	// beyond it the oldest are forgotten.
	maxFollowWatch = 10_000
)

// FollowOptions configures [Log.Follow]. The zero value follows from the
// newest committed row, polling every second.
type FollowOptions struct {
	// After is the ID after which rows are new; a caller that has just
	// listed the log passes the [Log.LastID] it took before listing.
	// Default 0 means every row of the log.
	After uint64
	// Pending lists the IDs of act rows the caller has already shown as
	// pending: they are shown again once their outcome is written.
	Pending []uint64
	// Every is how often the database is polled. Default 0 means
	// [DefaultFollowEvery]; it must be from [MinFollowEvery] to
	// [MaxFollowEvery].
	Every time.Duration
}

// LastID returns the ID of the newest committed row, 0 when the log is
// empty. It returns [ErrClosed] after Close.
func (l *Log) LastID(ctx context.Context) (uint64, error) {
	if err := l.usable(); err != nil {
		return 0, err
	}
	if err := l.isOpen(); err != nil {
		return 0, fmt.Errorf("audit: read the newest row: %w", err)
	}
	var id uint64
	if err := l.db.WithContext(ctx).Raw("SELECT COALESCE(MAX(id), 0) FROM " + Table).Scan(&id).Error; err != nil {
		return 0, fmt.Errorf("audit: read the newest row: %w", err)
	}
	return id, nil
}

// Follow calls fn with every row committed after o.After that matches q
// (Since, Tool, Client, FailedOnly; Limit is ignored), oldest first, as
// it polls the database every o.Every, until ctx ends, fn returns an
// error, or a poll fails. The rows of acts are written pending, before
// the act runs ([Log.Begin]): fn gets such a row when it is committed
// (with FailedOnly, only once its outcome is a failure) and again once
// its outcome is written, so every row is seen in its final state. On
// PostgreSQL, where replicas' transactions may commit out of ID order,
// holes in the IDs are watched for [followGapWait] so that late commits
// are not missed. It reads by primary key, so it costs one indexed query
// per poll on SQLite and PostgreSQL alike. It returns ctx's error when
// ctx ends, fn's error, or the failed query's; [ErrClosed] after Close.
func (l *Log) Follow(ctx context.Context, q Query, o FollowOptions, fn func(Record) error) error {
	every := o.Every
	if every == 0 {
		every = DefaultFollowEvery
	}
	if every < MinFollowEvery || every > MaxFollowEvery {
		return fmt.Errorf("audit: follow: poll interval %s is outside %s to %s", every, MinFollowEvery, MaxFollowEvery)
	}
	f := &follower{after: o.After, pending: map[uint64]bool{}, gaps: map[uint64]time.Time{}}
	for _, id := range o.Pending {
		f.pending[id] = true
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := f.poll(ctx, l, q, fn); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// follower is the state of one [Log.Follow].
type follower struct {
	// after is the newest ID seen.
	after uint64
	// pending holds the IDs of rows seen pending, whose outcome is awaited.
	pending map[uint64]bool
	// gaps holds the IDs below after not seen yet, with when they were
	// first missed.
	gaps map[uint64]time.Time
}

// poll reads the rows after f.after and those f watches, and calls fn
// with those to show.
func (f *follower) poll(ctx context.Context, l *Log, q Query, fn func(Record) error) error {
	if err := l.usable(); err != nil {
		return err
	}
	if err := l.isOpen(); err != nil {
		return fmt.Errorf("audit: follow: %w", err)
	}
	now := time.Now()
	for id, since := range f.gaps {
		if now.Sub(since) > followGapWait {
			delete(f.gaps, id)
		}
	}
	watched := slices.Sorted(maps.Keys(f.pending))
	watched = append(watched, slices.Sorted(maps.Keys(f.gaps))...)
	rows, err := l.tail(ctx, f.after, watched)
	if err != nil {
		return err
	}
	for _, r := range rows {
		wasPending := f.pending[r.ID]
		if r.ID > f.after {
			// Only PostgreSQL commits out of ID order; a jump wider than a
			// batch is rows pruned or the first read, not commits in flight.
			if l.postgres && f.after > 0 && r.ID-f.after <= followBatch {
				for id := f.after + 1; id < r.ID && len(f.gaps) < maxFollowWatch; id++ {
					f.gaps[id] = now
				}
			}
			f.after = r.ID
		}
		delete(f.gaps, r.ID)
		if r.Pending {
			if !wasPending && len(f.pending) < maxFollowWatch {
				f.pending[r.ID] = true
			}
			if wasPending || q.FailedOnly || !matches(r, q) {
				continue
			}
		} else {
			delete(f.pending, r.ID)
			if !matches(r, q) {
				continue
			}
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// matches reports whether r is one of the records q's Since, Tool, Client
// and FailedOnly select, as [Log.List] selects them.
func matches(r Record, q Query) bool {
	if !q.Since.IsZero() && r.TimeMs < q.Since.UnixMilli() {
		return false
	}
	if q.Tool != "" {
		// Rows written before tool names became client-safe hold the dotted form.
		name := sdk.ClientName(q.Tool)
		if r.Tool != name && !(strings.Contains(r.Tool, ".") && strings.ReplaceAll(r.Tool, ".", "_") == name) {
			return false
		}
	}
	if q.Client != "" && r.SourceType != q.Client && r.ClientName != q.Client {
		return false
	}
	return !q.FailedOnly || !r.Success && !r.Pending
}

// tail returns the committed rows whose ID is above after or in ids, by
// ID, at most followBatch of them. Every row is read, matching or not, so
// that a hole in the IDs is a row not committed yet, never one filtered
// out.
func (l *Log) tail(ctx context.Context, after uint64, ids []uint64) ([]Record, error) {
	tx := l.db.WithContext(ctx).Model(&Record{})
	if len(ids) > 0 {
		tx = tx.Where("id > ? OR id IN ?", after, ids)
	} else {
		tx = tx.Where("id > ?", after)
	}
	var out []Record
	if err := tx.Order("id").Limit(followBatch).Find(&out).Error; err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("audit: follow: %w", err)
	}
	return out, nil
}
