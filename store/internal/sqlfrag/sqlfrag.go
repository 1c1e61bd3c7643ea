// Package sqlfrag parses the raw SQL fragments a filter may carry for
// Quarry's SQL stores and prints them back as SQL Quarry wrote.
//
// A fragment is parsed, not pasted: it must be one boolean expression over
// the row's own columns (id, content, source_type, source_name, metadata),
// literals, the comparison, LIKE, IN, BETWEEN and IS operators, the
// dialect's JSON operators, casts to plain data types and an allow-list of
// pure functions (text, arithmetic, date and JSON access). Anything else —
// a subquery, a table, schema or qualified name, a function not on the
// list, a cast to a system type, a statement separator, a comment, a
// placeholder, a variable — is refused before any SQL runs, with an error
// that names the offending token and its position. What reaches the
// database is the parse tree printed back: every operation parenthesised,
// every name from the allow-list, every string either re-quoted by Quarry
// (PostgreSQL) or a bound parameter (MariaDB), so no quoting or lexing
// trick in the input survives into the statement.
//
// The grammar is Quarry's own, a subset of each dialect's expression
// syntax with PostgreSQL's operator precedence:
//
//	expr    = or
//	or      = and { "OR" and }
//	and     = not { "AND" not }
//	not     = "NOT" not | is
//	is      = cmp { "IS" ["NOT"] ("NULL" | "TRUE" | "FALSE" | "DISTINCT" "FROM" cmp) }
//	cmp     = pred [ ("=" | "<>" | "!=" | "<" | "<=" | ">" | ">=" | "<=>") pred ]
//	pred    = other [ ["NOT"] ("LIKE" | "ILIKE") other ["ESCAPE" string]
//	                | ["NOT"] "IN" "(" expr { "," expr } ")"
//	                | ["NOT"] "BETWEEN" other "AND" other ]
//	other   = add { jsonop add }           (->, ->>, #>, #>>, @>, <@, ?, ?|, ?&, @?, @@, ||)
//	add     = mul { ("+" | "-") mul }
//	mul     = unary { ("*" | "/" | "%" | "DIV" | "MOD") unary }
//	unary   = ("-" | "+") unary | postfix
//	postfix = primary { "::" type }
//	primary = number | string | TRUE | FALSE | NULL | column | func "(" [expr {"," expr}] ")"
//	        | "CAST" "(" expr "AS" type ")" | "(" expr ")" | "CASE" … "END"
//	        | "ARRAY" "[" … "]" | ("DATE" | "TIMESTAMP" | "INTERVAL") string
//	        | "INTERVAL" expr unit | "EXTRACT" "(" field "FROM" expr ")"
//	        | "CURRENT_DATE" | "CURRENT_TIMESTAMP"
//
// Which of these a dialect admits (ILIKE, "::", ARRAY, the JSON operators,
// "<=>", DIV) and its lists of functions and types are in Postgres and
// MariaDB.
package sqlfrag

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/quarry-rag/quarry/filter"
)

// Limits on a fragment: a filter is a short expression a person writes,
// and the parser recurses on its nesting.
const (
	// MaxBytes bounds a fragment's length.
	MaxBytes = 4 << 10
	// MaxDepth bounds its nesting.
	MaxDepth = 48
	// MaxNodes bounds the size of its parse tree.
	MaxNodes = 512
)

// Expr is a parsed fragment.
type Expr struct {
	root node
	d    *Dialect
}

// Parse reads src as a fragment of dialect d. The error, when there is
// one, is a *filter.SyntaxError naming the fragment's dialect, the byte
// offset and the offending token.
func Parse(d *Dialect, src string) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, d.refuse(src, 0, "", "the fragment is empty")
	}
	if len(src) > MaxBytes {
		return nil, d.refuse(src, 0, "", "the fragment is %d bytes; at most %d", len(src), MaxBytes)
	}
	if !utf8.ValidString(src) {
		return nil, d.refuse(src, 0, "", "the fragment is not valid UTF-8")
	}
	toks, err := lex(d, src)
	if err != nil {
		return nil, err
	}
	p := &parser{d: d, src: src, toks: toks}
	n, err := p.parse()
	if err != nil {
		return nil, err
	}
	return &Expr{root: n, d: d}, nil
}

// SQL prints the fragment as the SQL Quarry runs. bind receives each value
// the dialect binds as a parameter (MariaDB's strings) and returns its
// placeholder; dialects that print every literal (PostgreSQL) never call it.
func (e *Expr) SQL(bind func(any) string) string {
	var b strings.Builder
	pr := printer{d: e.d, b: &b, bind: bind}
	pr.node(e.root)
	return b.String()
}

// Rewrite parses src and prints it back: the SQL of a fragment that
// passed, or the error that refused it.
func Rewrite(d *Dialect, src string, bind func(any) string) (string, error) {
	e, err := Parse(d, src)
	if err != nil {
		return "", err
	}
	return e.SQL(bind), nil
}

// refuse builds the error that refuses fragment src at byte off, naming
// tok when there is one.
func (d *Dialect) refuse(src string, off int, tok string, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if tok != "" {
		msg = fmt.Sprintf("%s (at %q)", msg, clip(tok))
	}
	off = min(max(off, 0), len(src))
	col := utf8.RuneCountInString(src[:off]) + 1
	return &filter.SyntaxError{Syntax: filter.Syntax(d.Name + " raw fragment"), Offset: off, Column: col, Msg: msg}
}

// clip shortens a token for a message.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	i := 40
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
