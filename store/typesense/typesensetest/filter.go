package typesensetest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The filter_by language as far as the fake evaluates it: field:=v,
// field:!=v, field:>v (>=, <, <=), field:=[a,b] (any of), field:[a..b]
// (a closed range), && and || with parentheses (&& binds tighter).
// Values are bare tokens: numbers, true, false or strings without
// separators (backquoted strings are not needed by Quarry and refused).
// A string[] field matches when any element does; a document without the
// field matches != and nothing else.

type pred interface {
	match(doc map[string]any) bool
}

type andP []pred
type orP []pred

func (a andP) match(d map[string]any) bool {
	for _, p := range a {
		if !p.match(d) {
			return false
		}
	}
	return true
}

func (o orP) match(d map[string]any) bool {
	for _, p := range o {
		if p.match(d) {
			return true
		}
	}
	return false
}

type cmpP struct {
	field, op string
	vals      []string // one, or several for := [..]
	lo, hi    string   // a range [lo..hi]
	typ       string
}

func (c cmpP) match(d map[string]any) bool {
	v, ok := d[c.field]
	if !ok || v == nil {
		return c.op == "!="
	}
	elems := []any{v}
	if l, ok := v.([]any); ok {
		elems = l
	}
	switch c.op {
	case "!=":
		for _, e := range elems {
			if equal(e, c.vals[0]) {
				return false
			}
		}
		return true
	case "=":
		for _, e := range elems {
			for _, w := range c.vals {
				if equal(e, w) {
					return true
				}
			}
		}
		return false
	case "..":
		for _, e := range elems {
			if compare(e, c.lo) >= 0 && compare(e, c.hi) <= 0 {
				return true
			}
		}
		return false
	}
	for _, e := range elems {
		n := compare(e, c.vals[0])
		if (c.op == ">" && n > 0) || (c.op == ">=" && n >= 0) || (c.op == "<" && n < 0) || (c.op == "<=" && n <= 0) {
			return true
		}
	}
	return false
}

// equal compares a stored value with a filter token.
func equal(v any, tok string) bool {
	switch x := v.(type) {
	case string:
		return x == tok
	case bool:
		return strconv.FormatBool(x) == tok
	case float64:
		f, err := strconv.ParseFloat(tok, 64)
		return err == nil && f == x
	}
	return false
}

// compare orders a stored number against a filter token; -2 when either
// is not a number.
func compare(v any, tok string) int {
	x, ok := v.(float64)
	f, err := strconv.ParseFloat(tok, 64)
	if !ok || err != nil {
		return -2
	}
	switch {
	case x < f:
		return -1
	case x > f:
		return 1
	}
	return 0
}

// parseFilter reads filter_by against the collection's fields (name →
// type); id is always there.
func parseFilter(s string, fields map[string]field) (pred, error) {
	p := &fparser{s: s, fields: fields}
	x, err := p.or()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("could not parse the filter query: unexpected %q", p.s[p.i:])
	}
	return x, nil
}

type fparser struct {
	s      string
	i      int
	fields map[string]field
}

func (p *fparser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *fparser) eat(tok string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.i:], tok) {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *fparser) or() (pred, error) {
	var parts orP
	for {
		x, err := p.and()
		if err != nil {
			return nil, err
		}
		parts = append(parts, x)
		if !p.eat("||") {
			break
		}
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return parts, nil
}

func (p *fparser) and() (pred, error) {
	var parts andP
	for {
		x, err := p.term()
		if err != nil {
			return nil, err
		}
		parts = append(parts, x)
		if !p.eat("&&") {
			break
		}
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return parts, nil
}

func (p *fparser) term() (pred, error) {
	if p.eat("(") {
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.eat(")") {
			return nil, fmt.Errorf("could not parse the filter query: a parenthesis is not closed")
		}
		return x, nil
	}
	p.space()
	j := strings.IndexByte(p.s[p.i:], ':')
	if j <= 0 {
		return nil, fmt.Errorf("could not parse the filter query")
	}
	name := strings.TrimSpace(p.s[p.i : p.i+j])
	p.i += j + 1
	f, ok := p.fields[name]
	if name == "id" {
		f, ok = field{Name: "id", Type: "string"}, true
	}
	if !ok {
		return nil, fmt.Errorf("could not find a filter field named `%s` in the schema", name)
	}
	if f.Index != nil && !*f.Index {
		return nil, fmt.Errorf("cannot filter on non-indexed field `%s`", name)
	}
	c := cmpP{field: name, typ: f.Type}
	for _, op := range []string{"!=", ">=", "<=", ">", "<", "="} {
		if strings.HasPrefix(p.s[p.i:], op) {
			c.op = op
			p.i += len(op)
			break
		}
	}
	p.space()
	if strings.HasPrefix(p.s[p.i:], "[") {
		end := strings.IndexByte(p.s[p.i:], ']')
		if end < 0 {
			return nil, fmt.Errorf("could not parse the filter query: a list is not closed")
		}
		inner := p.s[p.i+1 : p.i+end]
		p.i += end + 1
		if lo, hi, ok := strings.Cut(inner, ".."); ok && (c.op == "" || c.op == "=") {
			c.op, c.lo, c.hi = "..", strings.TrimSpace(lo), strings.TrimSpace(hi)
			return c, checkNumbers(c, c.lo, c.hi)
		}
		if c.op == "" {
			c.op = "="
		}
		if c.op != "=" {
			return nil, fmt.Errorf("could not parse the filter query: a list takes := only here")
		}
		for _, v := range strings.Split(inner, ",") {
			c.vals = append(c.vals, strings.TrimSpace(v))
		}
		return c, checkNumbers(c, c.vals...)
	}
	if c.op == "" {
		return nil, fmt.Errorf("could not parse the filter query: `%s` needs :=, :!= or a comparison (the fake matches strings exactly only)", name)
	}
	j = p.i
	for j < len(p.s) && !strings.ContainsRune(" )&|", rune(p.s[j])) {
		j++
	}
	tok := p.s[p.i:j]
	if tok == "" || strings.HasPrefix(tok, "`") {
		return nil, fmt.Errorf("could not parse the filter query: value %q", tok)
	}
	p.i = j
	c.vals = []string{tok}
	if slices.Contains([]string{">", ">=", "<", "<="}, c.op) && !numeric(f.Type) {
		return nil, fmt.Errorf("range filters are only supported on numerical fields: `%s`", name)
	}
	return c, checkNumbers(c, tok)
}

func numeric(t string) bool {
	switch strings.TrimSuffix(t, "[]") {
	case "int32", "int64", "float":
		return true
	}
	return false
}

func checkNumbers(c cmpP, toks ...string) error {
	if !numeric(c.typ) {
		return nil
	}
	for _, t := range toks {
		if _, err := strconv.ParseFloat(t, 64); err != nil {
			return fmt.Errorf("error with filter field `%s`: Not an %s", c.field, c.typ)
		}
	}
	return nil
}
