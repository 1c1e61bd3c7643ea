package sqlfrag

import (
	"strings"
)

// node is one element of a parsed fragment; printer.node prints each.
type node interface{ isNode() }

type (
	numberLit struct{ text string }
	stringLit struct{ value string }
	keyword   struct{ word string } // TRUE, FALSE, NULL, CURRENT_DATE, CURRENT_TIMESTAMP
	column    struct{ name string }
	call      struct {
		name string
		args []node
	}
	cast struct {
		x   node
		typ string // as printed
	}
	unary struct {
		op string // NOT, -, +
		x  node
	}
	binary struct {
		op   string // as printed: AND, OR, =, LIKE, NOT LIKE, ->>, …
		l, r node
	}
	like struct {
		op     string // LIKE, NOT LIKE, ILIKE, NOT ILIKE
		x, pat node
		escape node // nil for none
	}
	inList struct {
		not  bool
		x    node
		list []node
	}
	between struct {
		not       bool
		x, lo, hi node
	}
	isTest struct {
		not  bool
		x    node
		what string // NULL, TRUE, FALSE
	}
	distinct struct {
		not  bool
		l, r node
	}
	caseExpr struct {
		operand node // nil for a searched CASE
		whens   []node
		thens   []node
		els     node // nil for none
	}
	array    struct{ elems []node }
	typedLit struct {
		typ   string // date, timestamp, interval
		value string
	}
	interval struct { // MariaDB's INTERVAL expr UNIT
		x    node
		unit string
	}
	extract struct {
		field string
		x     node
	}
)

func (numberLit) isNode() {}
func (stringLit) isNode() {}
func (keyword) isNode()   {}
func (column) isNode()    {}
func (call) isNode()      {}
func (cast) isNode()      {}
func (unary) isNode()     {}
func (binary) isNode()    {}
func (like) isNode()      {}
func (inList) isNode()    {}
func (between) isNode()   {}
func (isTest) isNode()    {}
func (distinct) isNode()  {}
func (caseExpr) isNode()  {}
func (array) isNode()     {}
func (typedLit) isNode()  {}
func (interval) isNode()  {}
func (extract) isNode()   {}

// reserved are words that start something no fragment may hold; naming
// them gives a better message than "unknown name".
var reserved = map[string]string{
	"select": "subqueries are not allowed", "with": "subqueries are not allowed", "values": "subqueries are not allowed",
	"table": "table references are not allowed", "exists": "subqueries are not allowed", "union": "UNION is not allowed",
	"intersect": "INTERSECT is not allowed", "except": "EXCEPT is not allowed", "from": "table references are not allowed",
	"into": "INTO is not allowed", "insert": "statements are not allowed", "update": "statements are not allowed",
	"delete": "statements are not allowed", "drop": "statements are not allowed", "set": "statements are not allowed",
	"create": "statements are not allowed", "alter": "statements are not allowed", "grant": "statements are not allowed",
	"copy": "statements are not allowed", "call": "statements are not allowed", "do": "statements are not allowed",
	"execute": "statements are not allowed", "declare": "statements are not allowed", "lateral": "table references are not allowed",
	"join": "table references are not allowed", "any": "ANY and ALL are not allowed: use IN", "all": "ANY and ALL are not allowed: use IN",
	"some": "ANY and ALL are not allowed: use IN", "collate": "COLLATE is not allowed", "row": "row constructors are not allowed",
}

type parser struct {
	d     *Dialect
	src   string
	toks  []token
	pos   int
	depth int
	nodes int
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

// isWord reports whether the next token is the bare word w.
func (p *parser) isWord(w string) bool {
	t := p.peek()
	return t.kind == tIdent && t.text == w
}

// isOp reports whether the next token is the operator o.
func (p *parser) isOp(o string) bool {
	t := p.peek()
	return t.kind == tOp && t.text == o
}

func (p *parser) acceptWord(w string) bool {
	if p.isWord(w) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) acceptOp(o string) bool {
	if p.isOp(o) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) fail(t token, format string, args ...any) error {
	tok := t.raw
	if t.kind == tEOF {
		tok = ""
		format += " (at the end)"
	}
	return p.d.refuse(p.src, t.off, tok, format, args...)
}

func (p *parser) expectOp(o string) error {
	if !p.acceptOp(o) {
		return p.fail(p.peek(), "expected %q", o)
	}
	return nil
}

func (p *parser) expectWord(w string) error {
	if !p.acceptWord(w) {
		return p.fail(p.peek(), "expected %s", strings.ToUpper(w))
	}
	return nil
}

// grow counts a node and checks the tree's size.
func (p *parser) grow(n node) (node, error) {
	p.nodes++
	if p.nodes > MaxNodes {
		return nil, p.fail(p.peek(), "the fragment is too large (over %d terms)", MaxNodes)
	}
	return n, nil
}

func (p *parser) parse() (node, error) {
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		if t.kind == tOp && t.text == ")" {
			return nil, p.fail(t, "a parenthesis is closed that was not opened")
		}
		if why, ok := reserved[t.text]; ok && t.kind == tIdent {
			return nil, p.fail(t, "%s", why)
		}
		return nil, p.fail(t, "unexpected text after the expression")
	}
	return n, nil
}

func (p *parser) expr() (node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > MaxDepth {
		return nil, p.fail(p.peek(), "the fragment nests too deeply (over %d levels)", MaxDepth)
	}
	return p.or()
}

func (p *parser) or() (node, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.isWord("or") || p.isOp("||") && !p.d.Operators["||"] {
		if p.isOp("||") {
			return nil, p.fail(p.peek(), "|| is not allowed (its meaning depends on the server's mode): write OR")
		}
		p.next()
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		if l, err = p.grow(binary{op: "OR", l: l, r: r}); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (p *parser) and() (node, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.acceptWord("and") {
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		if l, err = p.grow(binary{op: "AND", l: l, r: r}); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (p *parser) not() (node, error) {
	if p.acceptWord("not") {
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > MaxDepth {
			return nil, p.fail(p.peek(), "the fragment nests too deeply (over %d levels)", MaxDepth)
		}
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return p.grow(unary{op: "NOT", x: x})
	}
	return p.is()
}

func (p *parser) is() (node, error) {
	x, err := p.cmp()
	if err != nil {
		return nil, err
	}
	for p.acceptWord("is") {
		not := p.acceptWord("not")
		t := p.next()
		switch {
		case t.kind == tIdent && (t.text == "null" || t.text == "true" || t.text == "false"):
			if x, err = p.grow(isTest{not: not, x: x, what: strings.ToUpper(t.text)}); err != nil {
				return nil, err
			}
		case t.kind == tIdent && t.text == "distinct" && p.d.Operators["distinct"]:
			if err := p.expectWord("from"); err != nil {
				return nil, err
			}
			r, err := p.cmp()
			if err != nil {
				return nil, err
			}
			if x, err = p.grow(distinct{not: not, l: x, r: r}); err != nil {
				return nil, err
			}
		default:
			return nil, p.fail(t, "IS takes NULL, TRUE or FALSE")
		}
	}
	return x, nil
}

var comparisons = map[string]bool{"=": true, "<>": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true}

func (p *parser) cmp() (node, error) {
	l, err := p.pred()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind == tOp && (comparisons[t.text] || t.text == "<=>" && p.d.Operators["<=>"]) {
		p.next()
		r, err := p.pred()
		if err != nil {
			return nil, err
		}
		op := t.text
		if op == "!=" {
			op = "<>"
		}
		return p.grow(binary{op: op, l: l, r: r})
	}
	return l, nil
}

func (p *parser) pred() (node, error) {
	x, err := p.other()
	if err != nil {
		return nil, err
	}
	start := p.pos
	not := p.acceptWord("not")
	t := p.peek()
	switch {
	case t.kind == tIdent && (t.text == "like" || t.text == "ilike" && p.d.Operators["ilike"]):
		p.next()
		pat, err := p.other()
		if err != nil {
			return nil, err
		}
		op := strings.ToUpper(t.text)
		if not {
			op = "NOT " + op
		}
		l := like{op: op, x: x, pat: pat}
		if p.acceptWord("escape") {
			e := p.next()
			if e.kind != tString || len([]rune(e.text)) != 1 {
				return nil, p.fail(e, "ESCAPE takes a string of one character")
			}
			l.escape = stringLit{value: e.text}
		}
		return p.grow(l)
	case t.kind == tIdent && t.text == "in":
		p.next()
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		if p.isWord("select") || p.isWord("with") || p.isWord("values") || p.isWord("table") {
			return nil, p.fail(p.peek(), "subqueries are not allowed")
		}
		var list []node
		for {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			list = append(list, e)
			if !p.acceptOp(",") {
				break
			}
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return p.grow(inList{not: not, x: x, list: list})
	case t.kind == tIdent && t.text == "between":
		p.next()
		if p.isWord("symmetric") {
			return nil, p.fail(p.peek(), "BETWEEN SYMMETRIC is not allowed")
		}
		lo, err := p.other()
		if err != nil {
			return nil, err
		}
		if err := p.expectWord("and"); err != nil {
			return nil, err
		}
		hi, err := p.other()
		if err != nil {
			return nil, err
		}
		return p.grow(between{not: not, x: x, lo: lo, hi: hi})
	}
	if not {
		p.pos = start
		return nil, p.fail(p.peek(), "NOT here must be followed by LIKE, IN or BETWEEN")
	}
	return x, nil
}

// jsonOps are the "other" operators of PostgreSQL's precedence table that
// a dialect may admit.
var jsonOps = []string{"->>", "->", "#>>", "#>", "@>", "<@", "?|", "?&", "?", "@?", "@@", "||"}

func (p *parser) other() (node, error) {
	l, err := p.add()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tOp || !isJSONOp(t.text) {
			return l, nil
		}
		if !p.d.Operators[t.text] {
			if t.text == "||" {
				return l, nil // or() names it
			}
			return nil, p.fail(t, "operator %s is not allowed in a %s fragment", t.text, p.d.Name)
		}
		p.next()
		r, err := p.add()
		if err != nil {
			return nil, err
		}
		if l, err = p.grow(binary{op: t.text, l: l, r: r}); err != nil {
			return nil, err
		}
	}
}

func isJSONOp(s string) bool {
	for _, o := range jsonOps {
		if s == o {
			return true
		}
	}
	return false
}

func (p *parser) add() (node, error) {
	l, err := p.mul()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		t := p.next()
		r, err := p.mul()
		if err != nil {
			return nil, err
		}
		if l, err = p.grow(binary{op: t.text, l: l, r: r}); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (p *parser) mul() (node, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		op := ""
		switch {
		case t.kind == tOp && (t.text == "*" || t.text == "/" || t.text == "%"):
			op = t.text
		case t.kind == tIdent && (t.text == "div" || t.text == "mod") && p.d.Operators[t.text] &&
			!(p.pos+1 < len(p.toks) && p.toks[p.pos+1].kind == tOp && p.toks[p.pos+1].text == "("):
			op = strings.ToUpper(t.text)
		}
		if op == "" {
			return l, nil
		}
		p.next()
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		if l, err = p.grow(binary{op: op, l: l, r: r}); err != nil {
			return nil, err
		}
	}
}

func (p *parser) unary() (node, error) {
	if p.isOp("-") || p.isOp("+") {
		t := p.next()
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > MaxDepth {
			return nil, p.fail(t, "the fragment nests too deeply (over %d levels)", MaxDepth)
		}
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return p.grow(unary{op: t.text, x: x})
	}
	return p.postfix()
}

func (p *parser) postfix() (node, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for p.isOp("::") {
		t := p.next()
		if !p.d.Operators["::"] {
			return nil, p.fail(t, ":: is not allowed in a %s fragment: write CAST(x AS type)", p.d.Name)
		}
		typ, err := p.typeName()
		if err != nil {
			return nil, err
		}
		if x, err = p.grow(cast{x: x, typ: typ}); err != nil {
			return nil, err
		}
	}
	if p.isOp("[") {
		return nil, p.fail(p.peek(), "subscripts are not allowed: use the JSON operators or functions")
	}
	return x, nil
}

// typeName reads a cast's target type: one of the dialect's types, with an
// optional (n) or (p, s) modifier and, in PostgreSQL, [] for an array.
func (p *parser) typeName() (string, error) {
	t := p.next()
	if t.kind != tIdent {
		return "", p.fail(t, "expected a type name")
	}
	name := t.text
	// Types of several words: double precision, character varying,
	// timestamp with(out) time zone, signed integer.
	for {
		u := p.peek()
		if u.kind != tIdent {
			break
		}
		joined := name + " " + u.text
		if _, ok := p.d.Types[joined]; ok || joined == "timestamp with" || joined == "timestamp without" ||
			joined == "timestamp with time" || joined == "timestamp without time" {
			name = joined
			p.next()
			continue
		}
		break
	}
	printed, ok := p.d.Types[name]
	if !ok {
		return "", p.fail(t, "type %s is not allowed in a fragment: cast to a plain data type (text, a number, boolean, a date or time, JSON)", name)
	}
	if p.acceptOp("(") {
		var mods []string
		for {
			n := p.next()
			if n.kind != tNumber || strings.ContainsAny(n.text, ".eE") || len(n.text) > 4 {
				return "", p.fail(n, "a type modifier is a small whole number")
			}
			mods = append(mods, n.text)
			if !p.acceptOp(",") {
				break
			}
		}
		if len(mods) > 2 {
			return "", p.fail(p.peek(), "a type takes at most two modifiers")
		}
		if err := p.expectOp(")"); err != nil {
			return "", err
		}
		printed += "(" + strings.Join(mods, ", ") + ")"
	}
	if p.isOp("[") && p.d.Operators["array"] {
		p.next()
		if err := p.expectOp("]"); err != nil {
			return "", err
		}
		printed += "[]"
	}
	return printed, nil
}

func (p *parser) primary() (node, error) {
	t := p.next()
	switch t.kind {
	case tNumber:
		return p.grow(numberLit{text: t.text})
	case tString:
		return p.grow(stringLit{value: t.text})
	case tQIdent:
		if !p.d.Columns[t.text] {
			return nil, p.fail(t, "unknown column %q: a fragment names only the columns %s", t.text, columnList)
		}
		return p.grow(column{name: t.text})
	case tOp:
		if t.text == "(" {
			if p.isWord("select") || p.isWord("with") || p.isWord("values") || p.isWord("table") {
				return nil, p.fail(p.peek(), "subqueries are not allowed")
			}
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return x, nil
		}
		if t.text == ")" {
			return nil, p.fail(t, "a parenthesis is closed that was not opened")
		}
		return nil, p.fail(t, "expected a value, a column or a function")
	case tEOF:
		return nil, p.fail(t, "the expression is incomplete")
	}
	// A bare word.
	w := t.text
	switch w {
	case "true", "false", "null":
		return p.grow(keyword{word: strings.ToUpper(w)})
	case "current_date", "current_timestamp":
		return p.grow(keyword{word: strings.ToUpper(w)})
	case "cast":
		return p.castCall()
	case "case":
		return p.caseExpr()
	case "extract":
		return p.extract()
	case "array":
		if p.d.Operators["array"] && p.isOp("[") {
			return p.array()
		}
	case "date", "timestamp", "interval":
		if s := p.peek(); s.kind == tString {
			if p.d.IntervalUnits != nil && w == "interval" {
				break // MariaDB: INTERVAL expr UNIT, below
			}
			p.next()
			return p.grow(typedLit{typ: strings.ToUpper(w), value: s.text})
		}
	}
	if w == "interval" && p.d.IntervalUnits != nil {
		x, err := p.add()
		if err != nil {
			return nil, err
		}
		u := p.next()
		if u.kind != tIdent || !p.d.IntervalUnits[u.text] {
			return nil, p.fail(u, "INTERVAL takes a unit (SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER, YEAR)")
		}
		return p.grow(interval{x: x, unit: strings.ToUpper(u.text)})
	}
	if p.isOp("(") {
		return p.call(t)
	}
	if p.d.Columns[w] {
		return p.grow(column{name: w})
	}
	if why, ok := reserved[w]; ok {
		return nil, p.fail(t, "%s", why)
	}
	return nil, p.fail(t, "unknown name %q: a fragment names only the columns %s", t.raw, columnList)
}

var columnList = strings.Join(columns, ", ")

func (p *parser) call(name token) (node, error) {
	p.next() // (
	a, ok := p.d.Functions[name.text]
	if !ok {
		if why, ok := reserved[name.text]; ok {
			return nil, p.fail(name, "%s", why)
		}
		return nil, p.fail(name, "function %s is not allowed in a fragment (only pure text, number, date and JSON functions are)", name.raw)
	}
	if p.isWord("select") || p.isWord("with") || p.isWord("values") {
		return nil, p.fail(p.peek(), "subqueries are not allowed")
	}
	if p.isWord("distinct") || p.isWord("all") || p.isOp("*") {
		return nil, p.fail(p.peek(), "aggregate calls are not allowed")
	}
	var args []node
	if !p.isOp(")") {
		for {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			args = append(args, e)
			if len(args) > maxArgs {
				return nil, p.fail(p.peek(), "too many arguments")
			}
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	hi := a.max
	if hi < 0 {
		hi = maxArgs
	}
	if len(args) < a.min || len(args) > hi {
		if a.min == hi {
			return nil, p.fail(name, "%s takes %d argument(s), got %d", name.text, a.min, len(args))
		}
		return nil, p.fail(name, "%s takes %d to %d arguments, got %d", name.text, a.min, hi, len(args))
	}
	if p.isWord("over") || p.isWord("filter") || p.isWord("within") {
		return nil, p.fail(p.peek(), "window and aggregate clauses are not allowed")
	}
	return p.grow(call{name: name.text, args: args})
}

func (p *parser) castCall() (node, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expectWord("as"); err != nil {
		return nil, err
	}
	typ, err := p.typeName()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return p.grow(cast{x: x, typ: typ})
}

func (p *parser) caseExpr() (node, error) {
	c := caseExpr{}
	if !p.isWord("when") {
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.operand = x
	}
	for p.acceptWord("when") {
		w, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expectWord("then"); err != nil {
			return nil, err
		}
		th, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.whens, c.thens = append(c.whens, w), append(c.thens, th)
	}
	if len(c.whens) == 0 {
		return nil, p.fail(p.peek(), "CASE needs at least one WHEN")
	}
	if p.acceptWord("else") {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.els = e
	}
	if err := p.expectWord("end"); err != nil {
		return nil, err
	}
	return p.grow(c)
}

func (p *parser) extract() (node, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	f := p.next()
	if f.kind != tIdent || !p.d.ExtractFields[f.text] {
		return nil, p.fail(f, "EXTRACT takes a field such as YEAR, MONTH, DAY, HOUR")
	}
	if err := p.expectWord("from"); err != nil {
		return nil, err
	}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return p.grow(extract{field: strings.ToUpper(f.text), x: x})
}

func (p *parser) array() (node, error) {
	p.next() // [
	var elems []node
	if !p.isOp("]") {
		for {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			elems = append(elems, e)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if err := p.expectOp("]"); err != nil {
		return nil, err
	}
	return p.grow(array{elems: elems})
}
