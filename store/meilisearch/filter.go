package meilisearch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store/internal/exprfilter"
)

// syntax is Meilisearch's filter language over the fields Quarry keeps:
// strings compared hex-encoded, as they are stored, and a document has a
// filterable field when q_has lists it (Meilisearch's != holds for a
// document without the field).
var syntax = exprfilter.Syntax{
	Dialect:    Dialect,
	RawHint:    "a meilisearch raw fragment must be a JSON string holding a filter expression",
	And:        " AND ",
	Or:         " OR ",
	SourceType: fSType,
	SourceName: fSName,
	Field:      metaField,
	Present:    func(name string) string { return fHas + " = " + literal(name) },
	Literal:    literal,
	Eq:         func(f, v string) string { return f + " = " + v },
	Neq:        func(f, v string) string { return f + " != " + v },
	In:         func(f string, vs []string) string { return f + " IN [" + strings.Join(vs, ", ") + "]" },
	Range:      func(f, op, v string) string { return f + " " + op + " " + v },
}

// literal is a value in a filter: strings hex-encoded as they are stored,
// in quotes, numbers and booleans bare.
func literal(v any) string {
	switch x := v.(type) {
	case string:
		return `"` + hexs(x) + `"`
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// and joins filter expressions, skipping empty ones.
func and(parts ...string) string { return syntax.Join(parts...) }

// visible is the filter of a kind's documents under a user filter; false
// when the filter cannot match.
func (c *collection) visible(kind string, f filter.Expr) (string, bool, error) {
	expr, fold, err := syntax.Compile(f, c.cfg.Schema)
	if err != nil || fold == filter.Never {
		return "", false, err
	}
	return and(kindIs(kind), expr), true, nil
}

// kindIs is the filter of one kind of document; kinds are plain words,
// stored as they are.
func kindIs(kind string) string { return fKind + ` = "` + kind + `"` }
