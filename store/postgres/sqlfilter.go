package postgres

import (
	"fmt"
	"strconv"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store/internal/sqlexpr"
	"github.com/quarry-rag/quarry/store/internal/sqlfrag"
)

// Dialect is the tag raw filter fragments for this store carry.
const Dialect = "postgres"

// compiled is a WHERE fragment and its bound arguments. Values only ever
// travel as arguments; the SQL text holds column names, operators and
// placeholders, and raw fragments tagged "postgres" as sqlfrag prints
// them once they have parsed.
type compiled struct {
	sql  string
	args []any
}

// compileFilter turns a validated filter into SQL over the quarry_documents
// columns. argBase is the number of arguments already bound before it.
// Semantics follow filter.Matcher: a missing field matches nothing (neq
// included), numbers compare numerically, other values need the same JSON
// type, ranges need a number, contains_* an array.
func compileFilter(e filter.Expr, argBase int) (compiled, error) {
	c := &compiler{n: argBase}
	s, err := sqlexpr.Walk(e, c)
	if err != nil {
		return compiled{}, err
	}
	return compiled{sql: s, args: c.args}, nil
}

// compileGuarded is compileFilter for a filter with raw fragments: lead
// and the rest of the filter are tested before any fragment is
// (sqlexpr.Guarded).
func compileGuarded(e filter.Expr, lead string, argBase int) (compiled, error) {
	c := &compiler{n: argBase}
	s, err := sqlexpr.Guarded(e, c, lead)
	if err != nil {
		return compiled{}, err
	}
	return compiled{sql: s, args: c.args}, nil
}

type compiler struct {
	n    int
	args []any
}

func (c *compiler) bind(v any) string {
	c.n++
	c.args = append(c.args, v)
	return "$" + strconv.Itoa(c.n)
}

// Raw implements sqlexpr.Compiler: a fragment tagged "postgres", parsed
// against sqlfrag's allow-list and printed back as the SQL Quarry runs.
func (c *compiler) Raw(x *filter.Raw) (string, error) {
	frag, err := sqlexpr.Fragment(x, Dialect)
	if err != nil {
		return "", err
	}
	sql, err := sqlfrag.Rewrite(sqlfrag.Postgres, frag, nil)
	if err != nil {
		return "", err
	}
	return "(" + sql + ")", nil
}

// Condition implements sqlexpr.Compiler.
func (c *compiler) Condition(x *filter.Condition) (string, error) {
	if x.Field == "sourceType" || x.Field == "sourceName" {
		return c.column(x)
	}
	return c.metadata(x)
}

// column compiles a condition on a built-in text column.
func (c *compiler) column(x *filter.Condition) (string, error) {
	col := "source_type"
	if x.Field == "sourceName" {
		col = "source_name"
	}
	switch x.Op {
	case filter.OpEq:
		s, ok := x.Value.(string)
		if !ok {
			return "FALSE", nil
		}
		return col + " = " + c.bind(s), nil
	case filter.OpNeq:
		s, ok := x.Value.(string)
		if !ok {
			return "TRUE", nil // a string never equals a non-string
		}
		return col + " <> " + c.bind(s), nil
	case filter.OpIn:
		var ss []string
		for _, v := range x.Value.([]any) {
			if s, ok := v.(string); ok {
				ss = append(ss, s)
			}
		}
		if len(ss) == 0 {
			return "FALSE", nil
		}
		return col + " = ANY(" + c.bind(ss) + "::text[])", nil
	}
	return "FALSE", nil // ranges and containment never match a string column
}

// metadata compiles a condition on a metadata field.
func (c *compiler) metadata(x *filter.Condition) (string, error) {
	field := x.Field
	if !sqlexpr.IsIdent(field) {
		return "", fmt.Errorf("field name %q is not portable", field)
	}
	ref := "metadata->'" + field + "'" // field names are ^[A-Za-z_][A-Za-z0-9_]*$: safe as a literal
	present := "(" + ref + " IS NOT NULL AND jsonb_typeof(" + ref + ") <> 'null')"
	switch x.Op {
	case filter.OpEq:
		v, err := jsonValue(x.Value)
		if err != nil {
			return "", err
		}
		return ref + " = " + c.bind(v) + "::text::jsonb", nil
	case filter.OpNeq:
		v, err := jsonValue(x.Value)
		if err != nil {
			return "", err
		}
		return "(" + present + " AND " + ref + " <> " + c.bind(v) + "::text::jsonb)", nil
	case filter.OpIn:
		vals := x.Value.([]any)
		js := make([]string, len(vals))
		for i, v := range vals {
			j, err := jsonValue(v)
			if err != nil {
				return "", err
			}
			js[i] = j
		}
		return ref + " = ANY(" + c.bind(js) + "::text[]::jsonb[])", nil
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		v, err := jsonValue(x.Value)
		if err != nil {
			return "", err
		}
		op := map[filter.Op]string{filter.OpGt: ">", filter.OpGte: ">=", filter.OpLt: "<", filter.OpLte: "<="}[x.Op]
		// jsonb orders numbers numerically; the type test keeps booleans
		// and objects (which sort above numbers) out.
		return "(jsonb_typeof(" + ref + ") = 'number' AND " + ref + " " + op + " " + c.bind(v) + "::text::jsonb)", nil
	case filter.OpContainsAny, filter.OpContainsAll:
		vals := x.Value.([]any)
		ss := make([]string, len(vals))
		for i, v := range vals {
			s, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("%s on %q takes strings", x.Op, field)
			}
			ss[i] = s
		}
		op := "?|"
		if x.Op == filter.OpContainsAll {
			op = "?&"
		}
		// ? also matches a scalar string, so require an array.
		return "(jsonb_typeof(" + ref + ") = 'array' AND " + ref + " " + op + " " + c.bind(ss) + "::text[])", nil
	}
	return "", fmt.Errorf("unsupported operator %s", x.Op)
}

// jsonValue encodes a canonical filter scalar as JSON text, floats staying
// floats.
func jsonValue(v any) (string, error) {
	b, err := document.MarshalValue(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
