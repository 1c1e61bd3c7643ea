package filter

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParseText parses the text form used on the command line (SEMANTICS §2):
//
//	tenant = 'acme' and (year >= 2025 or tags contains any ('go','rag'))
//
// and binds tighter than or; keywords are case-insensitive; strings use
// single quotes with ” for a quote; there is no not and no raw fragment.
// Errors carry the column of the offending token.
func ParseText(s string) (Expr, error) {
	p := &textParser{src: s}
	p.next()
	e, err := p.expr(0)
	if err == nil && p.tok.kind != tokEOF {
		err = p.errAt(p.tok, "expected \"and\", \"or\" or end of filter, found %s", p.tok.describe())
	}
	if err != nil {
		return nil, err
	}
	if err := Check(e); err != nil {
		return nil, &SyntaxError{Syntax: SyntaxText, Msg: trimPrefix(err), Err: err}
	}
	return e, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokString
	tokNumber
	tokOp // = != > >= < <=
	tokLParen
	tokRParen
	tokComma
	tokBad
)

type token struct {
	kind tokKind
	text string // identifier, operator, number literal, or decoded string
	off  int
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of filter"
	case tokString:
		return fmt.Sprintf("string '%s'", t.text)
	case tokBad:
		return t.text
	}
	return fmt.Sprintf("%q", t.text)
}

func (t token) is(kw string) bool { return t.kind == tokIdent && strings.EqualFold(t.text, kw) }

type textParser struct {
	src string
	pos int
	tok token
}

func (p *textParser) errAt(t token, format string, args ...any) error {
	return &SyntaxError{Syntax: SyntaxText, Offset: t.off, Column: column(p.src, t.off), Msg: fmt.Sprintf(format, args...)}
}

func (p *textParser) next() {
	s := p.src
	for p.pos < len(s) {
		r, n := utf8.DecodeRuneInString(s[p.pos:])
		if !unicode.IsSpace(r) {
			break
		}
		p.pos += n
	}
	start := p.pos
	if p.pos >= len(s) {
		p.tok = token{kind: tokEOF, off: start}
		return
	}
	c := s[p.pos]
	switch {
	case c == '(':
		p.pos++
		p.tok = token{kind: tokLParen, text: "(", off: start}
	case c == ')':
		p.pos++
		p.tok = token{kind: tokRParen, text: ")", off: start}
	case c == ',':
		p.pos++
		p.tok = token{kind: tokComma, text: ",", off: start}
	case c == '=':
		p.pos++
		if p.pos < len(s) && s[p.pos] == '=' {
			p.pos++
			p.tok = token{kind: tokBad, text: `"==" (use "=")`, off: start}
			return
		}
		p.tok = token{kind: tokOp, text: "=", off: start}
	case c == '!' || c == '<' || c == '>':
		p.pos++
		op := string(c)
		if p.pos < len(s) && s[p.pos] == '=' {
			p.pos++
			op += "="
		} else if c == '<' && p.pos < len(s) && s[p.pos] == '>' {
			p.pos++
			op = "!="
		}
		if op == "!" {
			p.tok = token{kind: tokBad, text: `"!" (there is no not; use "!=")`, off: start}
			return
		}
		p.tok = token{kind: tokOp, text: op, off: start}
	case c == '\'':
		p.lexString(start)
	case c == '"':
		p.tok = token{kind: tokBad, text: `a double quote (strings use single quotes: 'acme')`, off: start}
		p.pos = len(s)
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		p.lexNumber(start)
	default:
		r, _ := utf8.DecodeRuneInString(s[p.pos:])
		if r == '_' || unicode.IsLetter(r) {
			for p.pos < len(s) {
				r, n := utf8.DecodeRuneInString(s[p.pos:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				p.pos += n
			}
			p.tok = token{kind: tokIdent, text: s[start:p.pos], off: start}
			return
		}
		p.tok = token{kind: tokBad, text: fmt.Sprintf("unexpected character %q", r), off: start}
		p.pos = len(s)
	}
}

func (p *textParser) lexString(start int) {
	s := p.src
	var b strings.Builder
	i := start + 1
	for {
		if i >= len(s) {
			p.tok = token{kind: tokBad, text: "an unterminated string", off: start}
			p.pos = len(s)
			return
		}
		if s[i] == '\'' {
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i += 2
				continue
			}
			i++
			break
		}
		b.WriteByte(s[i])
		i++
	}
	p.pos = i
	p.tok = token{kind: tokString, text: b.String(), off: start}
}

func (p *textParser) lexNumber(start int) {
	s := p.src
	i := start
	if s[i] == '-' || s[i] == '+' {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits > 0 && i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			i = j
		}
	}
	p.pos = i
	if digits == 0 {
		p.tok = token{kind: tokBad, text: fmt.Sprintf("malformed number %q", s[start:i]), off: start}
		return
	}
	p.tok = token{kind: tokNumber, text: s[start:i], off: start}
}

const maxTextDepth = 100

// expr = term { "or" term }
func (p *textParser) expr(depth int) (Expr, error) {
	if depth > maxTextDepth {
		return nil, p.errAt(p.tok, "filter nests deeper than %d levels", maxTextDepth)
	}
	first, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	parts := []Expr{first}
	for p.tok.is("or") {
		p.next()
		t, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		parts = append(parts, t)
	}
	return group(OpOr, parts), nil
}

// term = factor { "and" factor }
func (p *textParser) term(depth int) (Expr, error) {
	first, err := p.factor(depth)
	if err != nil {
		return nil, err
	}
	parts := []Expr{first}
	for p.tok.is("and") {
		p.next()
		f, err := p.factor(depth)
		if err != nil {
			return nil, err
		}
		parts = append(parts, f)
	}
	return group(OpAnd, parts), nil
}

// factor = "(" expr ")" | cond
func (p *textParser) factor(depth int) (Expr, error) {
	switch p.tok.kind {
	case tokLParen:
		open := p.tok
		p.next()
		e, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokRParen {
			return nil, p.errAt(p.tok, "expected \")\" to close the \"(\" at column %d, found %s", column(p.src, open.off), p.tok.describe())
		}
		p.next()
		return e, nil
	case tokIdent:
		return p.cond()
	case tokBad:
		return nil, p.errAt(p.tok, "unexpected %s", p.tok.text)
	}
	return nil, p.errAt(p.tok, "expected a field name or \"(\", found %s", p.tok.describe())
}

var textOps = map[string]Op{"=": OpEq, "!=": OpNeq, ">": OpGt, ">=": OpGte, "<": OpLt, "<=": OpLte}

// cond = field op value | field "in" list | field "contains" ("any"|"all") list
func (p *textParser) cond() (Expr, error) {
	fieldTok := p.tok
	field := fieldTok.text
	p.next()
	var op Op
	switch {
	case p.tok.kind == tokOp:
		op = textOps[p.tok.text]
		p.next()
		v, err := p.value(field, op)
		if err != nil {
			return nil, err
		}
		return p.checked(fieldTok, cond(op, field, v))
	case p.tok.is("in"):
		op = OpIn
		p.next()
	case p.tok.is("contains"):
		p.next()
		switch {
		case p.tok.is("any"):
			op = OpContainsAny
		case p.tok.is("all"):
			op = OpContainsAll
		default:
			return nil, p.errAt(p.tok, "expected \"any\" or \"all\" after \"contains\", found %s", p.tok.describe())
		}
		p.next()
	case p.tok.kind == tokBad:
		return nil, p.errAt(p.tok, "unexpected %s", p.tok.text)
	default:
		return nil, p.errAt(p.tok, "expected an operator (= != > >= < <= in, contains any, contains all) after field %q, found %s", field, p.tok.describe())
	}
	list, err := p.list(field, op)
	if err != nil {
		return nil, err
	}
	return p.checked(fieldTok, cond(op, field, list))
}

// checked runs the construction rules on one condition so the error carries
// the condition's position.
func (p *textParser) checked(at token, c *Condition) (Expr, error) {
	if err := checkCondition(c); err != nil {
		var fe *Error
		errors.As(err, &fe)
		return nil, &SyntaxError{Syntax: SyntaxText, Offset: at.off, Column: column(p.src, at.off), Msg: trimPrefix(err), Err: fe}
	}
	return c, nil
}

// list = "(" value { "," value } ")"
func (p *textParser) list(field string, op Op) ([]any, error) {
	if p.tok.kind != tokLParen {
		return nil, p.errAt(p.tok, "expected \"(\" to start the list of %s on field %q, found %s", op, field, p.tok.describe())
	}
	p.next()
	if p.tok.kind == tokRParen {
		return nil, p.errAt(p.tok, "%s on field %q requires at least one value", op, field)
	}
	var out []any
	for {
		v, err := p.value(field, op)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.tok.kind == tokComma {
			p.next()
			continue
		}
		if p.tok.kind == tokRParen {
			p.next()
			return out, nil
		}
		return nil, p.errAt(p.tok, "expected \",\" or \")\" in the list of field %q, found %s", field, p.tok.describe())
	}
}

// value = string | number | "true" | "false"
func (p *textParser) value(field string, op Op) (any, error) {
	t := p.tok
	switch {
	case t.kind == tokString:
		p.next()
		return t.text, nil
	case t.kind == tokNumber:
		p.next()
		lit := strings.TrimPrefix(t.text, "+")
		if !strings.ContainsAny(lit, ".eE") {
			if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
				return n, nil
			}
		}
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			return nil, p.errAt(t, "number %s is out of range", t.text)
		}
		return f, nil
	case t.is("true"):
		p.next()
		return true, nil
	case t.is("false"):
		p.next()
		return false, nil
	case t.is("null"):
		err := p.errAt(t, "null is never a valid comparison value (%s on field %q)", op, field).(*SyntaxError)
		err.Err = errorf(field, op, ReasonNull, "null is never a valid comparison value (%s on field %q)", op, field)
		return nil, err
	case t.kind == tokIdent:
		return nil, p.errAt(t, "expected a value for field %q, found %s (quote strings: '%s')", field, t.describe(), t.text)
	case t.kind == tokBad:
		return nil, p.errAt(t, "unexpected %s", t.text)
	}
	return nil, p.errAt(t, "expected a value for field %q, found %s", field, t.describe())
}
