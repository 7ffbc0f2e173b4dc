package memory

import "strings"

// conds collects the conditions of a WHERE clause over chunks c,
// documents d and sources s, with their variables in order.
type conds struct {
	list []string
	vars []any
	// postgres makes the conditions PostgreSQL's: match is then a
	// tsquery's text (see tsqueryOf).
	postgres bool
}

// add appends cond, whose placeholders take vars.
func (c *conds) add(cond string, vars ...any) {
	c.list = append(c.list, cond)
	c.vars = append(c.vars, vars...)
}

// in appends cond (with one IN ? placeholder) for values, unless values is
// empty: no filter, not "matches nothing".
func (c *conds) in(cond string, values []string) {
	if len(values) > 0 {
		c.add(cond, values)
	}
}

// scope appends the condition that keeps d.namespace within sc.
func (c *conds) scope(sc scope) {
	if cond, vars := sc.cond("d.namespace"); cond != "" {
		c.add(cond, vars...)
	}
}

// match appends the condition that chunk c matches match, an FTS5
// expression (a tsquery's text on PostgreSQL), unless it is "".
func (c *conds) match(match string) {
	switch {
	case match == "":
	case c.postgres:
		c.add("c.tsv @@ to_tsquery('"+pgTextConfig+"', ?)", match)
	default:
		c.add("c.pk IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)", match)
	}
}

// sql returns the conditions joined with AND, true when there are none.
func (c *conds) sql() string {
	if len(c.list) == 0 {
		if c.postgres {
			return "TRUE"
		}
		return "1"
	}
	return strings.Join(c.list, " AND ")
}
