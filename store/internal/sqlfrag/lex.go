package sqlfrag

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

type kind uint8

const (
	tEOF    kind = iota
	tIdent       // a bare word: a keyword, column, function or type; lower-cased
	tQIdent      // a "quoted" identifier, its case kept
	tNumber      // digits, a point, an exponent: printed as written
	tString      // a string literal, decoded
	tOp          // punctuation and operators
)

type token struct {
	kind kind
	text string // lower-cased word, decoded string, number or operator
	raw  string // the input it came from, for messages
	off  int
}

// operators are the punctuation the lexer knows, longest first so the
// longest match wins. Whether a dialect admits one is the parser's call.
var operators = []string{"->>", "#>>", "<=>", "::", "->", "#>", "@>", "<@", "?|", "?&", "@?", "@@", "||", "<>", "!=", "<=", ">=",
	"=", "<", ">", "+", "-", "*", "/", "%", "(", ")", ",", "[", "]", "?"}

// lex splits src into tokens. It refuses, naming them, the characters no
// fragment needs and that the usual injections are made of: statement
// separators, comments, placeholders and dollar quotes, variables,
// qualified names, backquotes and non-ASCII text outside strings.
func lex(d *Dialect, src string) ([]token, error) {
	var out []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
			continue
		case c == '-' && strings.HasPrefix(src[i:], "--"), c == '/' && strings.HasPrefix(src[i:], "/*"), c == '#' && !strings.HasPrefix(src[i:], "#>"):
			return nil, d.refuse(src, i, src[i:min(i+2, len(src))], "comments are not allowed in a fragment")
		case c == ';':
			return nil, d.refuse(src, i, ";", "a fragment is one expression: statement separators are not allowed")
		case c == '$':
			return nil, d.refuse(src, i, src[i:min(i+2, len(src))], "placeholders and dollar-quoted strings are not allowed: write values as literals")
		case c == '@' && (!d.Operators["@>"] || i+1 < len(src) && (isIdentStart(src[i+1]) || src[i+1] == '@' && i+2 < len(src) && isIdentStart(src[i+2]))):
			return nil, d.refuse(src, i, "@", "variables are not allowed in a fragment")
		case c == '`':
			return nil, d.refuse(src, i, "`", "quoted identifiers are not allowed: name a column plainly")
		case c == '\\':
			return nil, d.refuse(src, i, `\`, "a backslash is allowed only inside a string")
		case c == '.' && (i+1 >= len(src) || !isDigit(src[i+1])):
			return nil, d.refuse(src, i, ".", "qualified names are not allowed: a fragment names only the row's own columns")
		case c >= utf8.RuneSelf:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, d.refuse(src, i, string(r), "characters outside ASCII are allowed only inside strings")
		case c == '\'':
			s, n, err := lexString(d, src, i, false)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tString, text: s, raw: src[i : i+n], off: i})
			i += n
			continue
		case c == '"':
			if !d.QuotedIdents {
				return nil, d.refuse(src, i, `"`, "double quotes are not allowed: write strings in single quotes")
			}
			end := strings.IndexByte(src[i+1:], '"')
			if end < 0 {
				return nil, d.refuse(src, i, src[i:], "a quoted identifier is not closed")
			}
			name := src[i+1 : i+1+end]
			out = append(out, token{kind: tQIdent, text: name, raw: src[i : i+end+2], off: i})
			i += end + 2
			continue
		case isDigit(c) || c == '.':
			n, err := lexNumber(d, src, i)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tNumber, text: src[i : i+n], raw: src[i : i+n], off: i})
			i += n
			continue
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentByte(src[j]) {
				j++
			}
			word := src[i:j]
			if j < len(src) && src[j] == '\'' {
				// A prefixed string: E'…' where the dialect has them;
				// U&'…', B'…', X'…', N'…' and the like are refused.
				if d.EscapeStrings && (word == "e" || word == "E") {
					s, n, err := lexString(d, src, j, true)
					if err != nil {
						return nil, err
					}
					out = append(out, token{kind: tString, text: s, raw: src[i : j+n], off: i})
					i = j + n
					continue
				}
				return nil, d.refuse(src, i, word+"'", "prefixed strings are not allowed: write a plain '…' string")
			}
			if j < len(src) && src[j] == '&' {
				return nil, d.refuse(src, i, word+"&", "Unicode-escaped names and strings are not allowed")
			}
			out = append(out, token{kind: tIdent, text: strings.ToLower(word), raw: word, off: i})
			i = j
			continue
		}
		op := ""
		for _, o := range operators {
			if strings.HasPrefix(src[i:], o) {
				op = o
				break
			}
		}
		if op == "" {
			return nil, d.refuse(src, i, src[i:i+1], "this character is not allowed in a fragment")
		}
		out = append(out, token{kind: tOp, text: op, raw: op, off: i})
		i += len(op)
	}
	return append(out, token{kind: tEOF, off: len(src)}), nil
}

// lexString reads the string literal whose quote is at src[start]; esc
// decodes PostgreSQL's E'…' backslash escapes. It returns the decoded
// value and the literal's length in bytes.
func lexString(d *Dialect, src string, start int, esc bool) (string, int, error) {
	var b strings.Builder
	for i := start + 1; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\'':
			if i+1 < len(src) && src[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			s := b.String()
			if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
				return "", 0, d.refuse(src, start, src[start:i+1], "a string holds a NUL or invalid UTF-8")
			}
			return s, i + 1 - start, nil
		case c == '\\' && esc:
			n, err := unescape(d, src, i, &b)
			if err != nil {
				return "", 0, err
			}
			i += n - 1
		case c == '\\' && !d.EscapeStrings:
			return "", 0, d.refuse(src, i, `\`, "backslashes are not allowed in strings: their meaning depends on the server's mode")
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, d.refuse(src, start, src[start:], "a string is not closed")
}

// unescape decodes the E'…' escape at src[i] (a backslash) into b and
// returns its length. Octal and hexadecimal byte escapes are refused: they
// can spell bytes that are not UTF-8.
func unescape(d *Dialect, src string, i int, b *strings.Builder) (int, error) {
	if i+1 >= len(src) {
		return 0, d.refuse(src, i, `\`, "a string ends in a backslash")
	}
	switch c := src[i+1]; c {
	case '\\', '\'':
		b.WriteByte(c)
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'u', 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		if i+2+n > len(src) {
			return 0, d.refuse(src, i, src[i:], "a Unicode escape is cut short")
		}
		v, err := strconv.ParseUint(src[i+2:i+2+n], 16, 32)
		if err != nil || v == 0 || v > utf8.MaxRune || (v >= 0xD800 && v <= 0xDFFF) {
			return 0, d.refuse(src, i, src[i:i+2+n], "not a Unicode character")
		}
		b.WriteRune(rune(v))
		return 2 + n, nil
	default:
		return 0, d.refuse(src, i, src[i:i+2], "this escape is not allowed: use \\\\ \\' \\n \\r \\t \\b \\f or \\uXXXX")
	}
	return 2, nil
}

// lexNumber reads digits [. digits] [e [+-] digits] at src[i] and refuses
// a number run into letters (0x1F, 1e, 12abc), which some dialects read as
// something else.
func lexNumber(d *Dialect, src string, i int) (int, error) {
	j := i
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	if j < len(src) && src[j] == '.' {
		j++
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	}
	if j == i+1 && src[i] == '.' {
		return 0, d.refuse(src, i, ".", "not a number")
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k >= len(src) || !isDigit(src[k]) {
			return 0, d.refuse(src, i, src[i:min(k+1, len(src))], "a number's exponent has no digits")
		}
		for k < len(src) && isDigit(src[k]) {
			k++
		}
		j = k
	}
	if j < len(src) && (isIdentByte(src[j]) || src[j] == '.') {
		end := j
		for end < len(src) && (isIdentByte(src[end]) || src[end] == '.') {
			end++
		}
		return 0, d.refuse(src, i, src[i:end], "a number runs into letters")
	}
	return j - i, nil
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentByte(c byte) bool  { return isIdentStart(c) || isDigit(c) }
