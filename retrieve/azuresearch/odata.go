package azuresearch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

// Dialect tags raw filter fragments for Azure AI Search: a JSON string
// holding an OData $filter expression over the index's own fields,
// developer-authored like every raw fragment.
const Dialect = "azure"

// odata is a compiled filter: what it is known to be, and when that
// depends on the document, its OData expression.
type odata struct {
	t    filter.Fold
	expr string
}

// compile turns a filter into an OData $filter expression with the
// portable meaning (SEMANTICS §2): a missing field makes every operator
// false, neq included (OData's ne is true for null, so it is paired with
// "ne null"); numbers compare numerically and other values need the
// field's own type; a list never equals a scalar. Fields the index does
// not declare as filterable fold to never, as they would for a document
// that lacks them, so a scope naming such a field matches nothing instead
// of everything. sourceType is the constant SourceType; sourceName is the
// source field (or the key).
func (ix *Index) compile(e filter.Expr) (odata, error) {
	switch x := e.(type) {
	case nil:
		return odata{t: filter.Always}, nil
	case *filter.Group:
		parts, fold, err := filter.FoldGroup(x, func(e filter.Expr) (string, filter.Fold, error) {
			c, err := ix.compile(e)
			return c.expr, c.t, err
		})
		switch {
		case err != nil || fold != filter.Depends:
			return odata{t: fold}, err
		case len(parts) == 1:
			return odata{expr: parts[0]}, nil
		}
		return odata{expr: "(" + strings.Join(parts, " "+string(x.Op)+" ") + ")"}, nil
	case *filter.Raw:
		if x.Store != Dialect {
			return odata{}, fmt.Errorf("raw filter targets %s; this source is %s", x.Store, Dialect)
		}
		var s string
		dec := json.NewDecoder(bytes.NewReader(x.Fragment))
		if err := dec.Decode(&s); err != nil || strings.TrimSpace(s) == "" {
			return odata{}, fmt.Errorf("an azure raw fragment must be a JSON string holding an OData expression")
		}
		return odata{expr: "(" + s + ")"}, nil
	case *filter.Condition:
		return ix.compileCondition(x)
	}
	return odata{}, fmt.Errorf("unsupported filter expression %T", e)
}

func (ix *Index) compileCondition(c *filter.Condition) (odata, error) {
	var name string
	var typ document.FieldType
	switch c.Field {
	case "sourceType":
		m, err := filter.NewMatcher(c)
		if err != nil {
			return odata{}, err
		}
		if m.MatchDocument(&document.Document{SourceType: SourceType, Metadata: map[string]any{}}) {
			return odata{t: filter.Always}, nil
		}
		return odata{t: filter.Never}, nil
	case "sourceName":
		name, typ = ix.sourceField(), document.TypeString
	default:
		f, ok := ix.field(c.Field)
		if !ok {
			return odata{t: filter.Never}, nil
		}
		name, typ = f.Name, f.Type
	}
	one := func(s string) (odata, error) { return odata{expr: s}, nil }
	present := name + " ne null"
	switch c.Op {
	case filter.OpEq, filter.OpNeq, filter.OpIn:
		if typ.IsList() {
			if c.Op == filter.OpNeq {
				return one(present) // a list never equals a scalar
			}
			return odata{t: filter.Never}, nil
		}
		var lits, eqs []string
		for _, v := range filter.StoredValues(typ, c) {
			lits = append(lits, literal(v))
			eqs = append(eqs, name+" eq "+literal(v))
		}
		switch {
		case len(eqs) == 0 && c.Op == filter.OpNeq:
			return one(present) // a value of another type is never equal
		case len(eqs) == 0:
			return odata{t: filter.Never}, nil
		case c.Op == filter.OpNeq:
			return one("(" + present + " and " + name + " ne " + lits[0] + ")")
		case len(eqs) == 1:
			return one(eqs[0])
		}
		return one("(" + strings.Join(eqs, " or ") + ")")
	case filter.OpGt, filter.OpGte, filter.OpLt, filter.OpLte:
		if !typ.IsNumeric() || typ.IsList() {
			return odata{t: filter.Never}, nil
		}
		v, fold := filter.NumericBound(c.Op, typ, c.Value)
		switch fold {
		case filter.Always:
			return one(present)
		case filter.Never:
			return odata{t: filter.Never}, nil
		}
		// OData compares null with a number as false, as a missing field
		// must be.
		return one(name + " " + rangeOps[c.Op] + " " + literal(v))
	case filter.OpContainsAny, filter.OpContainsAll:
		if typ != document.TypeStringList {
			return odata{t: filter.Never}, nil // only lists of strings hold strings
		}
		var eqs []string
		for _, v := range c.Value.([]any) {
			if s, ok := v.(string); ok {
				eqs = append(eqs, "t eq "+literal(s))
			}
		}
		if len(eqs) == 0 {
			return odata{t: filter.Never}, nil
		}
		// Azure allows eq joined by or inside any() on a string
		// collection, not and: contains_all is one any() per value.
		if c.Op == filter.OpContainsAny {
			return one(name + "/any(t: " + strings.Join(eqs, " or ") + ")")
		}
		alls := make([]string, len(eqs))
		for i, eq := range eqs {
			alls[i] = name + "/any(t: " + eq + ")"
		}
		if len(alls) == 1 {
			return one(alls[0])
		}
		return one("(" + strings.Join(alls, " and ") + ")")
	}
	return odata{}, fmt.Errorf("unsupported operator %s", c.Op)
}

var rangeOps = map[filter.Op]string{filter.OpGt: "gt", filter.OpGte: "ge", filter.OpLt: "lt", filter.OpLte: "le"}

// literal is an OData literal: strings quoted with ' doubled, integers
// bare, doubles always with a decimal point or exponent so the service
// reads them as Edm.Double.
func literal(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s
	}
	return fmt.Sprint(v)
}
