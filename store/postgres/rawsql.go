package postgres

import (
	"errors"
	"fmt"
)

// checkFragment is the gate every raw SQL fragment passes before it is
// placed, in parentheses, after the collection's own condition. A fragment
// is one boolean expression: its parentheses balance and never close the
// one Quarry opens, and it holds no statement separator, no comment and no
// dollar-quoted string — the three ways text could end the expression
// early or hide the rest of the statement. Quoted strings and identifiers
// are skipped by PostgreSQL's own rules (E'...' strings with backslash
// escapes; a backslash in a plain string is refused, since a server with
// standard_conforming_strings off would read it differently). What remains is an expression ANDed inside the collection and
// the caller's scope: it can only narrow the rows, which is why raw
// fragments are still refused from requests unless an operator allows them
// (filter.CheckRequest).
func checkFragment(frag string) error {
	if frag == "" {
		return errors.New("raw SQL fragment is empty")
	}
	depth := 0
	for i := 0; i < len(frag); i++ {
		c := frag[i]
		switch {
		case c == '\'':
			esc := i > 0 && (frag[i-1] == 'e' || frag[i-1] == 'E') && (i < 2 || !identByte(frag[i-2]))
			end, err := skipQuoted(frag, i, '\'', esc)
			if err != nil {
				return err
			}
			i = end
		case c == '"':
			end, err := skipQuoted(frag, i, '"', false)
			if err != nil {
				return err
			}
			i = end
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return fmt.Errorf("raw SQL fragment closes a parenthesis it did not open (at byte %d)", i)
			}
		case c == ';':
			return fmt.Errorf("raw SQL fragment holds a statement separator ';' (at byte %d)", i)
		case c == '-' && i+1 < len(frag) && frag[i+1] == '-',
			c == '/' && i+1 < len(frag) && frag[i+1] == '*':
			return fmt.Errorf("raw SQL fragment holds a comment (at byte %d)", i)
		case c == '$' && (i == 0 || !identByte(frag[i-1])):
			// $1 would be a placeholder out of Quarry's numbering and
			// $tag$ a dollar-quoted string: neither belongs in a fragment.
			return fmt.Errorf("raw SQL fragment holds '$' (a placeholder or dollar quote) at byte %d; write values as literals", i)
		case c == 0:
			return errors.New("raw SQL fragment holds a NUL byte")
		}
	}
	if depth != 0 {
		return errors.New("raw SQL fragment leaves a parenthesis open")
	}
	return nil
}

// skipQuoted returns the index of the quote that closes the one at start;
// a doubled quote is an escaped one, and with esc a backslash escapes the
// next byte (PostgreSQL's E” strings).
func skipQuoted(s string, start int, q byte, esc bool) (int, error) {
	for i := start + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if esc {
				i++
			} else if q == '\'' {
				// With standard_conforming_strings off a server would read
				// it as an escape and end the string elsewhere than here.
				return 0, fmt.Errorf("raw SQL fragment has a backslash in a plain string (at byte %d); write it as E'...'", i)
			}
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i, nil
		}
	}
	return 0, fmt.Errorf("raw SQL fragment leaves a quoted string open (from byte %d)", start)
}

func identByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
