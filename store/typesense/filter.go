package typesense

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store/internal/exprfilter"
)

// syntax is Typesense's filter_by over the fields Quarry keeps: strings
// compared hex-encoded, as they are stored, a document has a filterable
// field when q_has lists it (Typesense's != holds for a document without
// the field), and a float field is matched by closed ranges, as := on
// floats is not documented to be exact.
var syntax = exprfilter.Syntax{
	Dialect:    Dialect,
	RawHint:    "a typesense raw fragment must be a JSON string holding a filter_by expression",
	And:        " && ",
	Or:         " || ",
	SourceType: fSType,
	SourceName: fSName,
	Field:      metaField,
	Present:    func(name string) string { return fHas + ":=" + hexs(name) },
	Literal:    literal,
	Eq:         func(f, v string) string { return f + ":=" + v },
	Neq:        func(f, v string) string { return f + ":!=" + v },
	In:         func(f string, vs []string) string { return f + ":=[" + strings.Join(vs, ",") + "]" },
	Range:      func(f, op, v string) string { return f + ":" + op + v },
	FloatEq: func(f string, vs []string) string {
		rs := make([]string, len(vs))
		for i, v := range vs {
			rs[i] = f + ":[" + v + ".." + v + "]"
		}
		if len(rs) == 1 {
			return rs[0]
		}
		return "(" + strings.Join(rs, " || ") + ")"
	},
}

// literal is a value in filter_by: strings hex-encoded as they are
// stored, numbers and booleans bare.
func literal(v any) string {
	switch x := v.(type) {
	case string:
		return hexs(x)
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

// and joins filter_by expressions, skipping empty ones.
func and(parts ...string) string { return syntax.Join(parts...) }

// visible is the filter_by of a kind's documents under a user filter;
// false when the filter cannot match.
func (c *collection) visible(kind string, f filter.Expr) (string, bool, error) {
	expr, fold, err := syntax.Compile(f, c.cfg.Schema)
	if err != nil || fold == filter.Never {
		return "", false, err
	}
	return and(fKind+":="+kind, expr), true, nil
}
