package meilisearchtest

import (
	"fmt"
	"strconv"
	"strings"
)

// The filter language as far as the fake evaluates it: attr = v, !=, >,
// >=, <, <=, attr IN [a, b], attr EXISTS, NOT, AND (binding tighter than
// OR) and parentheses; values bare or in double quotes (with \" and \\
// escapes). Every attribute must be filterable. Strings compare ignoring
// case, as Meilisearch's do; numbers numerically; a list matches when an
// element does; a document without the attribute matches != and nothing
// else but NOT.

type pred interface {
	match(d map[string]any) bool
}

type always struct{}

func (always) match(map[string]any) bool { return true }

type andP []pred
type orP []pred
type notP struct{ p pred }

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

func (n notP) match(d map[string]any) bool { return !n.p.match(d) }

type cmpP struct {
	attr, op string
	vals     []string
}

func (c cmpP) match(d map[string]any) bool {
	v, ok := d[c.attr]
	if c.op == "EXISTS" {
		return ok
	}
	if !ok || v == nil {
		return c.op == "!="
	}
	elems := []any{v}
	if l, ok := v.([]any); ok {
		elems = l
	}
	if c.op == "!=" {
		for _, e := range elems {
			if equal(e, c.vals[0]) {
				return false
			}
		}
		return true
	}
	for _, e := range elems {
		for _, w := range c.vals {
			switch c.op {
			case "=", "IN":
				if equal(e, w) {
					return true
				}
			default:
				x, isNum := e.(float64)
				y, err := strconv.ParseFloat(w, 64)
				if !isNum || err != nil {
					continue
				}
				if (c.op == ">" && x > y) || (c.op == ">=" && x >= y) || (c.op == "<" && x < y) || (c.op == "<=" && x <= y) {
					return true
				}
			}
		}
	}
	return false
}

func equal(e any, w string) bool {
	switch x := e.(type) {
	case string:
		return strings.EqualFold(x, w)
	case float64:
		y, err := strconv.ParseFloat(w, 64)
		return err == nil && x == y
	case bool:
		return strconv.FormatBool(x) == strings.ToLower(w)
	}
	return false
}

type token struct {
	s      string
	quoted bool
}

func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case strings.ContainsRune("()[],", rune(c)):
			out = append(out, token{s: string(c)})
			i++
		case c == '!' || c == '>' || c == '<' || c == '=':
			j := i + 1
			if j < len(s) && s[j] == '=' {
				j++
			}
			out = append(out, token{s: s[i:j]})
			i = j
		case c == '"' || c == '\'':
			var sb strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
				sb.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string")
			}
			out = append(out, token{s: sb.String(), quoted: true})
			i = j + 1
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n()[],!<>=\"'", rune(s[j])) {
				j++
			}
			out = append(out, token{s: s[i:j]})
			i = j
		}
	}
	return out, nil
}

type parser struct {
	toks []token
	pos  int
	ix   *index
}

func (ix *index) parseFilter(s string) (pred, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, ix: ix}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q at token %d", p.toks[p.pos].s, p.pos)
	}
	return e, nil
}

func (p *parser) peek(word string) bool {
	return p.pos < len(p.toks) && !p.toks[p.pos].quoted && strings.EqualFold(p.toks[p.pos].s, word)
}

func (p *parser) or() (pred, error) {
	var parts orP
	for {
		e, err := p.and()
		if err != nil {
			return nil, err
		}
		parts = append(parts, e)
		if !p.peek("OR") {
			break
		}
		p.pos++
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return parts, nil
}

func (p *parser) and() (pred, error) {
	var parts andP
	for {
		e, err := p.not()
		if err != nil {
			return nil, err
		}
		parts = append(parts, e)
		if !p.peek("AND") {
			break
		}
		p.pos++
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return parts, nil
}

func (p *parser) not() (pred, error) {
	if p.peek("NOT") {
		p.pos++
		e, err := p.not()
		return notP{e}, err
	}
	return p.primary()
}

func (p *parser) next() (token, error) {
	if p.pos >= len(p.toks) {
		return token{}, fmt.Errorf("unexpected end of filter")
	}
	t := p.toks[p.pos]
	p.pos++
	return t, nil
}

func (p *parser) primary() (pred, error) {
	if p.peek("(") {
		p.pos++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.peek(")") {
			return nil, fmt.Errorf("missing )")
		}
		p.pos++
		return e, nil
	}
	attr, err := p.next()
	if err != nil {
		return nil, err
	}
	if !p.ix.filterable[attr.s] {
		return nil, fmt.Errorf("attribute `%s` is not filterable", attr.s)
	}
	op, err := p.next()
	if err != nil {
		return nil, err
	}
	switch strings.ToUpper(op.s) {
	case "EXISTS":
		return cmpP{attr: attr.s, op: "EXISTS"}, nil
	case "IN":
		if !p.peek("[") {
			return nil, fmt.Errorf("IN wants [")
		}
		p.pos++
		var vals []string
		for {
			v, err := p.next()
			if err != nil {
				return nil, err
			}
			vals = append(vals, v.s)
			sep, err := p.next()
			if err != nil {
				return nil, err
			}
			if sep.s == "]" && !sep.quoted {
				break
			}
			if sep.s != "," || sep.quoted {
				return nil, fmt.Errorf("IN wants , or ]")
			}
		}
		return cmpP{attr: attr.s, op: "IN", vals: vals}, nil
	case "=", "!=", ">", ">=", "<", "<=":
		v, err := p.next()
		if err != nil {
			return nil, err
		}
		return cmpP{attr: attr.s, op: op.s, vals: []string{v.s}}, nil
	}
	return nil, fmt.Errorf("unknown operator %q", op.s)
}
