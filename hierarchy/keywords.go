package hierarchy

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTriggers caps a node's triggers (SEMANTICS §6).
const MaxTriggers = 40

// minKeyword is the shortest keyword kept, in characters.
const minKeyword = 3

// codeStopWords are words too common in code and prose to name a node.
var codeStopWords = []string{"the", "and", "def", "class", "self", "init", "main", "get", "set", "str", "int", "list",
	"dict", "none", "true", "false", "test", "value", "data", "func", "return", "import", "from", "type", "new", "obj"}

// englishStopWords are common English words of three letters or more that
// headings are full of.
var englishStopWords = []string{"about", "after", "all", "also", "any", "are", "but", "can", "does", "for", "has", "have",
	"how", "into", "its", "may", "more", "not", "one", "other", "our", "out", "should", "some", "such", "than", "that",
	"their", "them", "then", "there", "these", "this", "those", "use", "used", "using", "was", "what", "when", "where",
	"which", "who", "why", "will", "with", "you", "your"}

// isStopWord reports whether w (lowercase) is a stop word.
func isStopWord(w string) bool {
	return slices.Contains(codeStopWords, w) || slices.Contains(englishStopWords, w)
}

// Keywords returns the keywords of texts in order of appearance: each word
// lowercased whole, then its camelCase and snake_case parts, keeping those
// of at least three characters that are neither stop words nor numbers,
// without repeats, at most limit (no limit when ≤ 0).
func Keywords(texts []string, limit int) []string {
	var out []string
	seen := map[string]bool{}
	add := func(w string) bool {
		w = strings.ToLower(w)
		if utf8.RuneCountInString(w) < minKeyword || isStopWord(w) || seen[w] || isNumber(w) {
			return false
		}
		seen[w] = true
		out = append(out, w)
		return limit > 0 && len(out) >= limit
	}
	for _, t := range texts {
		for _, word := range words(t) {
			if add(word) {
				return out
			}
			parts := splitIdent(word)
			if len(parts) < 2 {
				continue
			}
			for _, p := range parts {
				if add(p) {
					return out
				}
			}
		}
	}
	return out
}

func isNumber(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// words splits s into runs of letters, digits and underscores.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') })
}

// splitIdent splits an identifier at underscores and camelCase humps:
// "parseHTTPRequest" → parse, HTTP, Request.
func splitIdent(w string) []string {
	var out []string
	for _, part := range strings.Split(w, "_") {
		rs := []rune(part)
		start := 0
		for i := 1; i < len(rs); i++ {
			lowerToUpper := unicode.IsUpper(rs[i]) && !unicode.IsUpper(rs[i-1])
			acronymEnd := unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if lowerToUpper || acronymEnd {
				out = append(out, string(rs[start:i]))
				start = i
			}
		}
		if start < len(rs) {
			out = append(out, string(rs[start:]))
		}
	}
	return out
}

// MergeTriggers appends add to cur, dropping empty and repeated triggers
// (compared case-insensitively, stored lowercase), keeping order, at most
// MaxTriggers.
func MergeTriggers(cur, add []string) []string {
	out := make([]string, 0, min(len(cur)+len(add), MaxTriggers))
	seen := map[string]bool{}
	for _, t := range slices.Concat(cur, add) {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" || seen[t] {
			continue
		}
		if len(out) == MaxTriggers {
			break
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

// definitionRE finds a definition line in code: func, fn, def, class,
// interface, struct, impl, enum, trait or type with its name, after
// optional modifiers (the code splitter's definition rule).
var definitionRE = regexp.MustCompile(`(?m)^[ \t]*(?:(?:export|public|private|protected|internal|static|abstract|final|async|pub(?:\([a-z]+\))?|default|unsafe|open|sealed|data)\s+)*(?:function|func|fn|def|class|interface|struct|impl|enum|trait|type)\s+(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*)`)

// Symbols returns the names a chunk of code defines, in order.
func Symbols(text string) []string {
	var out []string
	for _, m := range definitionRE.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}
