package document

import (
	"strings"
	"unicode"
)

// NonCharacter reports whether r is one of Unicode's 66 non-characters
// (U+FDD0–U+FDEF, and the last two code points of every plane, U+FFFE and
// U+FFFF among them). They are for a program's internal use, never text a
// person wrote: a reader that lets one through (PDF engines leave U+FFFE
// where a soft hyphen was) splits words a search would find.
func NonCharacter(r rune) bool {
	return (r >= 0xFDD0 && r <= 0xFDEF) || (r&0xFFFE == 0xFFFE && r <= unicode.MaxRune)
}

// StripNonCharacters returns s without non-characters (s itself when it
// holds none).
func StripNonCharacters(s string) string {
	if strings.IndexFunc(s, NonCharacter) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if NonCharacter(r) {
			return -1
		}
		return r
	}, s)
}
