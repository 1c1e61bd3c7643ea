package sqlfrag

import "strings"

// printer writes a parse tree back as SQL: every operation in parentheses
// and every token apart, so the statement means exactly the tree (whatever
// the dialect's precedence) and no two tokens can run together into
// something else (a comment, a longer operator).
type printer struct {
	d    *Dialect
	b    *strings.Builder
	bind func(any) string
}

func (pr *printer) w(s ...string) {
	for _, x := range s {
		pr.b.WriteString(x)
	}
}

func (pr *printer) str(s string) {
	if pr.d.BindStrings {
		pr.w(pr.bind(s))
		return
	}
	// An E'' string reads the same whatever standard_conforming_strings
	// is: backslashes and quotes are escaped for it.
	pr.w("E'", strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s), "'")
}

func (pr *printer) list(ns []node) {
	for i, n := range ns {
		if i > 0 {
			pr.w(", ")
		}
		pr.node(n)
	}
}

func (pr *printer) node(n node) {
	switch x := n.(type) {
	case numberLit:
		pr.w(x.text)
	case stringLit:
		pr.str(x.value)
	case keyword:
		pr.w(x.word)
	case column:
		pr.w(x.name)
	case call:
		pr.w(x.name, "(")
		pr.list(x.args)
		pr.w(")")
	case cast:
		pr.w("CAST(")
		pr.node(x.x)
		pr.w(" AS ", x.typ, ")")
	case unary:
		pr.w("(", x.op, " ")
		pr.node(x.x)
		pr.w(")")
	case binary:
		pr.w("(")
		pr.node(x.l)
		pr.w(" ", x.op, " ")
		pr.node(x.r)
		pr.w(")")
	case like:
		pr.w("(")
		pr.node(x.x)
		pr.w(" ", x.op, " ")
		pr.node(x.pat)
		if x.escape != nil {
			pr.w(" ESCAPE ")
			pr.node(x.escape)
		}
		pr.w(")")
	case inList:
		pr.w("(")
		pr.node(x.x)
		if x.not {
			pr.w(" NOT")
		}
		pr.w(" IN (")
		pr.list(x.list)
		pr.w("))")
	case between:
		pr.w("(")
		pr.node(x.x)
		if x.not {
			pr.w(" NOT")
		}
		pr.w(" BETWEEN ")
		pr.node(x.lo)
		pr.w(" AND ")
		pr.node(x.hi)
		pr.w(")")
	case isTest:
		pr.w("(")
		pr.node(x.x)
		pr.w(" IS ")
		if x.not {
			pr.w("NOT ")
		}
		pr.w(x.what, ")")
	case distinct:
		pr.w("(")
		pr.node(x.l)
		pr.w(" IS ")
		if x.not {
			pr.w("NOT ")
		}
		pr.w("DISTINCT FROM ")
		pr.node(x.r)
		pr.w(")")
	case caseExpr:
		pr.w("(CASE")
		if x.operand != nil {
			pr.w(" ")
			pr.node(x.operand)
		}
		for i := range x.whens {
			pr.w(" WHEN ")
			pr.node(x.whens[i])
			pr.w(" THEN ")
			pr.node(x.thens[i])
		}
		if x.els != nil {
			pr.w(" ELSE ")
			pr.node(x.els)
		}
		pr.w(" END)")
	case array:
		pr.w("ARRAY[")
		pr.list(x.elems)
		pr.w("]")
	case typedLit:
		// Typed literals print as casts: MariaDB's take no placeholder.
		typ := strings.ToLower(x.typ)
		if pr.d.BindStrings {
			typ = map[string]string{"date": "DATE", "timestamp": "DATETIME"}[typ]
		}
		pr.w("CAST(")
		pr.str(x.value)
		pr.w(" AS ", typ, ")")
	case interval:
		pr.w("INTERVAL (")
		pr.node(x.x)
		pr.w(") ", x.unit)
	case extract:
		pr.w("EXTRACT(", x.field, " FROM ")
		pr.node(x.x)
		pr.w(")")
	}
}
