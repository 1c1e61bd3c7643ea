package azuresearchtest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// The subset of Azure AI Search's OData $filter language the fake
// evaluates: comparisons (eq ne gt ge lt le) of a field with a literal
// (string, number, true, false, null), and, or, not, parentheses, and
// any() over a string collection with eq joined by or, as the service
// restricts it. Semantics are OData's: null equals only null, ne holds for
// null, and an ordering comparison with null is false.

type node interface {
	eval(doc map[string]any, vars map[string]any) bool
}

type binary struct {
	and         bool
	left, right node
}

func (b binary) eval(d map[string]any, v map[string]any) bool {
	if b.and {
		return b.left.eval(d, v) && b.right.eval(d, v)
	}
	return b.left.eval(d, v) || b.right.eval(d, v)
}

type not struct{ x node }

func (n not) eval(d map[string]any, v map[string]any) bool { return !n.x.eval(d, v) }

type compare struct {
	field, op string
	value     any // string, float64, bool or nil
}

func (c compare) eval(d map[string]any, vars map[string]any) bool {
	got, ok := vars[c.field]
	if !ok {
		got = d[c.field]
	}
	if c.value == nil || got == nil {
		switch c.op {
		case "eq":
			return c.value == nil && got == nil
		case "ne":
			return (c.value == nil) != (got == nil)
		}
		return false
	}
	cmp, ok := order(got, c.value)
	if !ok {
		return c.op == "ne"
	}
	switch c.op {
	case "eq":
		return cmp == 0
	case "ne":
		return cmp != 0
	case "gt":
		return cmp > 0
	case "ge":
		return cmp >= 0
	case "lt":
		return cmp < 0
	case "le":
		return cmp <= 0
	}
	return false
}

// order compares two values of one kind.
func order(a, b any) (int, bool) {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return strings.Compare(x, y), ok
	case float64:
		y, ok := b.(float64)
		switch {
		case !ok:
			return 0, false
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case bool:
		y, ok := b.(bool)
		if !ok {
			return 0, false
		}
		if x == y {
			return 0, true
		}
		return 1, true
	}
	return 0, false
}

type anyOf struct {
	field, v string
	body     node
}

func (a anyOf) eval(d map[string]any, vars map[string]any) bool {
	items, _ := d[a.field].([]any)
	for _, it := range items {
		if a.body.eval(d, map[string]any{a.v: it}) {
			return true
		}
	}
	return false
}

// parseFilter parses an expression; fields says which names the index
// has as filterable fields, and whether each is a collection.
func parseFilter(s string, fields map[string]bool) (node, error) {
	p := &parser{toks: nil, fields: fields}
	if err := p.lex(s); err != nil {
		return nil, err
	}
	n, err := p.or(nil)
	if err != nil {
		return nil, err
	}
	if p.i != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.i])
	}
	return n, nil
}

type parser struct {
	toks   []string
	i      int
	fields map[string]bool // filterable field → is a collection
}

func (p *parser) lex(s string) error {
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case strings.ContainsRune("()/:,", c):
			p.toks = append(p.toks, string(c))
			i++
		case c == '\'':
			var b strings.Builder
			b.WriteByte('\'')
			j := i + 1
			for ; ; j++ {
				if j >= len(s) {
					return fmt.Errorf("unterminated string")
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			p.toks = append(p.toks, b.String())
			i = j + 1
		default:
			j := i
			for j < len(s) && !unicode.IsSpace(rune(s[j])) && !strings.ContainsRune("()/:,'", rune(s[j])) {
				j++
			}
			p.toks = append(p.toks, s[i:j])
			i = j
		}
	}
	return nil
}

func (p *parser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *parser) next() string {
	t := p.peek()
	p.i++
	return t
}

func (p *parser) expect(t string) error {
	if got := p.next(); got != t {
		return fmt.Errorf("expected %q, found %q", t, got)
	}
	return nil
}

func (p *parser) or(vars map[string]bool) (node, error) {
	l, err := p.and(vars)
	if err != nil {
		return nil, err
	}
	for p.peek() == "or" {
		p.next()
		r, err := p.and(vars)
		if err != nil {
			return nil, err
		}
		l = binary{left: l, right: r}
	}
	return l, nil
}

func (p *parser) and(vars map[string]bool) (node, error) {
	l, err := p.unary(vars)
	if err != nil {
		return nil, err
	}
	for p.peek() == "and" {
		if vars != nil {
			return nil, fmt.Errorf("'and' is not allowed inside any() on a string collection")
		}
		p.next()
		r, err := p.unary(vars)
		if err != nil {
			return nil, err
		}
		l = binary{and: true, left: l, right: r}
	}
	return l, nil
}

func (p *parser) unary(vars map[string]bool) (node, error) {
	switch t := p.peek(); {
	case t == "not":
		p.next()
		x, err := p.unary(vars)
		return not{x}, err
	case t == "(":
		p.next()
		x, err := p.or(vars)
		if err != nil {
			return nil, err
		}
		return x, p.expect(")")
	}
	field := p.next()
	if vars[field] {
		return p.comparison(field)
	}
	coll, ok := p.fields[field]
	if !ok {
		return nil, fmt.Errorf("could not find a property named '%s' on type 'search.document'", field)
	}
	if p.peek() == "/" {
		if !coll {
			return nil, fmt.Errorf("%s is not a collection", field)
		}
		p.next()
		if err := p.expect("any"); err != nil {
			return nil, err
		}
		if err := p.expect("("); err != nil {
			return nil, err
		}
		v := p.next()
		if err := p.expect(":"); err != nil {
			return nil, err
		}
		body, err := p.or(map[string]bool{v: true})
		if err != nil {
			return nil, err
		}
		return anyOf{field: field, v: v, body: body}, p.expect(")")
	}
	if coll {
		return nil, fmt.Errorf("a collection field (%s) is compared through any() or all()", field)
	}
	return p.comparison(field)
}

func (p *parser) comparison(field string) (node, error) {
	op := p.next()
	switch op {
	case "eq", "ne", "gt", "ge", "lt", "le":
	default:
		return nil, fmt.Errorf("expected a comparison after %s, found %q", field, op)
	}
	lit := p.next()
	var v any
	switch {
	case strings.HasPrefix(lit, "'"):
		v = lit[1:]
	case lit == "null":
	case lit == "true", lit == "false":
		v = lit == "true"
	default:
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a literal", lit)
		}
		v = f
	}
	return compare{field: field, op: op, value: v}, nil
}
