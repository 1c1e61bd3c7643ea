package mariadb

import (
	"fmt"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/store/internal/sqlexpr"
	"github.com/quarry-rag/quarry/store/internal/sqlfrag"
)

// compiled is a WHERE clause (" WHERE …", or "" for none) and its bound
// arguments. Values only ever travel as arguments; the SQL holds column
// names, JSON paths of identifier-safe field names, operators and
// placeholders, and raw fragments tagged "mariadb" as sqlfrag prints them
// once they have parsed.
type compiled struct {
	sql  string
	args []any
	// fenced is set when the filter holds raw fragments: the statement
	// then runs through Backend.fenced, guarded by sqlexpr.Guarded.
	fenced bool
}

func compileWhere(f filter.Expr) (compiled, error) {
	if f == nil {
		return compiled{}, nil
	}
	c := &compiler{}
	if sqlexpr.HasRaw(f) {
		s, err := sqlexpr.Guarded(f, c, "")
		if err != nil {
			return compiled{}, err
		}
		return compiled{sql: " WHERE " + s, args: c.args, fenced: true}, nil
	}
	s, err := sqlexpr.Walk(f, c)
	if err != nil {
		return compiled{}, err
	}
	return compiled{sql: " WHERE " + s, args: c.args}, nil
}

type compiler struct{ args []any }

func (c *compiler) bind(v any) string {
	c.args = append(c.args, v)
	return "?"
}

// Raw implements sqlexpr.Compiler: a fragment tagged "mariadb", parsed
// against sqlfrag's allow-list and printed back with its strings bound.
func (c *compiler) Raw(x *filter.Raw) (string, error) {
	frag, err := sqlexpr.Fragment(x, Dialect)
	if err != nil {
		return "", err
	}
	sql, err := sqlfrag.Rewrite(sqlfrag.MariaDB, frag, c.bind)
	if err != nil {
		return "", err
	}
	return "(" + sql + ")", nil
}

// Condition implements sqlexpr.Compiler.
func (c *compiler) Condition(x *filter.Condition) (string, error) {
	if x.Field == "sourceType" || x.Field == "sourceName" {
		return c.column(x), nil
	}
	return c.metadata(x)
}

// column compiles a condition on a built-in column (binary: exact).
func (c *compiler) column(x *filter.Condition) string {
	col := "source_type"
	if x.Field == "sourceName" {
		col = "source_name"
	}
	switch x.Op {
	case filter.OpEq:
		if s, ok := x.Value.(string); ok {
			return col + " = " + c.bind(s)
		}
		return "FALSE"
	case filter.OpNeq:
		if s, ok := x.Value.(string); ok {
			return col + " <> " + c.bind(s)
		}
		return "TRUE" // a string never equals a non-string
	case filter.OpIn:
		var ps []string
		for _, v := range x.Value.([]any) {
			if s, ok := v.(string); ok {
				ps = append(ps, c.bind(s))
			}
		}
		if len(ps) == 0 {
			return "FALSE"
		}
		return col + " IN (" + strings.Join(ps, ", ") + ")"
	}
	return "FALSE" // ranges and containment never match a string column
}

// metadata compiles a condition on a metadata field, with filter.Matcher's
// semantics: a missing or null field matches nothing, neq included;
// numbers compare numerically (integers as integers); strings and booleans
// need the same type and value.
func (c *compiler) metadata(x *filter.Condition) (string, error) {
	if !sqlexpr.IsIdent(x.Field) {
		return "", fmt.Errorf("field name %q is not portable", x.Field)
	}
	path := "'$." + x.Field + "'" // identifier-safe: a literal path
	ref := "JSON_EXTRACT(metadata, " + path + ")"
	typ := "JSON_TYPE(" + ref + ")"
	val := "JSON_VALUE(metadata, " + path + ")"
	switch x.Op {
	case filter.OpEq:
		return c.equal(typ, val, x.Value)
	case filter.OpNeq:
		eq, err := c.equal(typ, val, x.Value)
		if err != nil {
			return "", err
		}
		return "(" + typ + " IS NOT NULL AND " + typ + " <> 'NULL' AND NOT " + eq + ")", nil
	case filter.OpIn:
		vals := x.Value.([]any)
		if len(vals) == 0 {
			return "FALSE", nil
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			s, err := c.equal(typ, val, v)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return "(" + strings.Join(parts, " OR ") + ")", nil
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		op := map[filter.Op]string{filter.OpGt: ">", filter.OpGte: ">=", filter.OpLt: "<", filter.OpLte: "<="}[x.Op]
		return c.number(typ, val, op, x.Value)
	case filter.OpContainsAny, filter.OpContainsAll:
		vals := x.Value.([]any)
		parts := make([]string, len(vals))
		for i, v := range vals {
			s, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("%s on %q takes strings", x.Op, x.Field)
			}
			// JSON_CONTAINS compares strings exactly (case and accents).
			parts[i] = "JSON_CONTAINS(" + ref + ", JSON_QUOTE(" + c.bind(s) + "))"
		}
		join := " OR "
		if x.Op == filter.OpContainsAll {
			join = " AND "
		}
		return "(" + typ + " = 'ARRAY' AND (" + strings.Join(parts, join) + "))", nil
	}
	return "", fmt.Errorf("unsupported operator %s", x.Op)
}

// equal is stored = v.
func (c *compiler) equal(typ, val string, v any) (string, error) {
	switch w := v.(type) {
	case string:
		return "(" + typ + " = 'STRING' AND " + val + " COLLATE utf8mb4_bin = " + c.bind(w) + ")", nil
	case bool:
		s := "false"
		if w {
			s = "true"
		}
		// JSON_VALUE gives a boolean as 1 or 0; its JSON text is exact.
		return "(" + typ + " = 'BOOLEAN' AND " + strings.Replace(val, "JSON_VALUE", "JSON_EXTRACT", 1) + " = '" + s + "')", nil
	case int64, float64:
		return c.number(typ, val, "=", v)
	case nil:
		return "FALSE", nil
	}
	return "", fmt.Errorf("filter value %v (%T) is not a scalar", v, v)
}

// number is stored op v for a number v: integers against integers exactly,
// anything else as doubles.
func (c *compiler) number(typ, val, op string, v any) (string, error) {
	f, i, isInt, ok := document.Number(v)
	if !ok {
		return "FALSE", nil
	}
	if isInt {
		return "((" + typ + " = 'INTEGER' AND CAST(" + val + " AS SIGNED) " + op + " " + c.bind(i) + ") OR (" +
			typ + " = 'DOUBLE' AND CAST(" + val + " AS DOUBLE) " + op + " " + c.bind(f) + "))", nil
	}
	return "(" + typ + " IN ('INTEGER', 'DOUBLE') AND CAST(" + val + " AS DOUBLE) " + op + " " + c.bind(f) + ")", nil
}
