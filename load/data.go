package load

import (
	"bytes"
	"path"
	"regexp"
	"strings"
)

// Data that is not prose — keys and certificates, base64 and hex dumps,
// number tables, lock files, minified bundles, generated code — fills the
// keyword index with tokens nobody searches for and the answers with
// noise. Files that are such data are skipped with the reason
// (Options.KeepData reads them), and chunks that are such data inside a
// file of prose or code are left out by the ingestion, which says how many
// (EncodedShare).

// lockFiles are the lock and checksum files of package managers, by name.
var lockFiles = map[string]bool{
	"package-lock.json": true, "npm-shrinkwrap.json": true, "yarn.lock": true, "pnpm-lock.yaml": true,
	"bun.lockb": true, "go.sum": true, "cargo.lock": true, "poetry.lock": true, "pipfile.lock": true,
	"composer.lock": true, "gemfile.lock": true, "podfile.lock": true, "mix.lock": true, "flake.lock": true,
	"packages.lock.json": true, "uv.lock": true,
}

// generatedHeader is Go's convention for generated files (go help
// generate), which other generators follow too.
var generatedHeader = regexp.MustCompile(`(?m)^(?://|#) Code generated .* DO NOT EDIT\.$`)

// dataReason says why a file of text is data rather than something a
// person wrote to be read, or "" when it is not. name is the file's
// slash-separated path. Its content is judged only for prose and code:
// a CSV or JSON file of numbers is what its reader is for.
func dataReason(name string, kind Kind, text []byte) string {
	base := strings.ToLower(path.Base(name))
	switch {
	case lockFiles[base]:
		return "a lock file"
	case strings.HasSuffix(base, ".min.js"), strings.HasSuffix(base, ".min.css"), strings.HasSuffix(base, ".js.map"), strings.HasSuffix(base, ".css.map"):
		return "minified"
	}
	if kind != KindText && kind != KindCode && kind != KindMarkdown {
		return ""
	}
	if generatedHeader.Match(text[:min(len(text), 4096)]) {
		return "generated code (it says DO NOT EDIT)"
	}
	switch strings.ToLower(path.Ext(base)) {
	case ".js", ".mjs", ".cjs", ".css":
		if lines := bytes.Count(text, []byte("\n")) + 1; len(text) > 4096 && len(text)/lines > 500 {
			return "minified"
		}
	}
	if pemShare(text) > 0.5 {
		return "a certificate or key (PEM)"
	}
	if EncodedShare(string(text)) > 0.8 {
		return "encoded data (base64, hex or a number table)"
	}
	return ""
}

// pemShare is the share of text's non-space bytes inside PEM blocks.
func pemShare(text []byte) float64 {
	total := nonSpace(text)
	if total == 0 || !bytes.Contains(text, []byte("-----BEGIN ")) {
		return 0
	}
	in := 0
	rest := text
	for {
		i := bytes.Index(rest, []byte("-----BEGIN "))
		if i < 0 {
			break
		}
		j := bytes.Index(rest[i:], []byte("-----END "))
		if j < 0 {
			break
		}
		k := bytes.Index(rest[i+j+9:], []byte("-----"))
		end := i + j + 9
		if k >= 0 {
			end += k + 5
		}
		in += nonSpace(rest[i:end])
		rest = rest[end:]
	}
	return float64(in) / float64(total)
}

func nonSpaceString(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			n++
		}
	}
	return n
}

func nonSpace(b []byte) int {
	n := 0
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			n++
		}
	}
	return n
}

// EncodedShare is the share of text's non-space characters that are
// encoded data (base64, hex, \x escapes, number literals), between 0 and
// 1. Prose and code stay far below 0.5; a key, a dump or a table of
// numbers comes near 1. Runs of letters alone (a long identifier) are not
// counted: base64 mixes cases and digits. It reads text once, without a
// regular expression: ingestion asks it of every chunk.
func EncodedShare(text string) float64 {
	total := nonSpaceString(text)
	if total == 0 {
		return 0
	}
	in := encodedChars(text)
	// Punctuation between the numbers of a table (commas, braces) counts
	// with them when numbers are most of what is there.
	if share := float64(in) / float64(total); share < 0.6 {
		return share
	}
	return min(1, float64(in+punctuation(text))/float64(total))
}

// EncodedChunk reports whether a chunk of a file of kind is encoded data
// to leave out inside prose or code (a key in a test, a table of
// constants): over 0.8 of it by EncodedShare, in text, code, Markdown or
// HTML. Other kinds (CSV, JSON) are data by purpose.
func EncodedChunk(kind Kind, text string) bool {
	switch kind {
	case KindText, KindCode, KindMarkdown, KindHTML:
		return EncodedShare(text) > 0.8
	}
	return false
}

// minEncodedRun is the shortest run of base64 characters counted whole,
// and minEscapes the fewest \x escapes in a row.
const (
	minEncodedRun = 48
	minEscapes    = 12
)

// encodedChars counts the characters of text that are encoded data: runs
// of at least minEncodedRun base64 characters (with up to two '=' after)
// that mix cases and digits, runs of at least minEscapes \x escapes, and
// number literals standing as words of their own (0x1f, 42, 3.14).
func encodedChars(text string) int {
	in := 0
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case isBase64(c):
			j := i
			for j < len(text) && isBase64(text[j]) {
				j++
			}
			if j-i >= minEncodedRun {
				k := j
				for k < len(text) && k < j+2 && text[k] == '=' {
					k++
				}
				if mixed(text[i:k]) {
					in += k - i
				}
				i = k
				continue
			}
			n, next := numberChars(text, i, j)
			in += n
			i = next
		case c == '\\':
			j := i
			for j+3 < len(text) && text[j] == '\\' && text[j+1] == 'x' && isHexDigit(text[j+2]) && isHexDigit(text[j+3]) {
				j += 4
			}
			if (j-i)/4 >= minEscapes {
				in += j - i
				i = j
				continue
			}
			i++
		default:
			i++
		}
	}
	return in
}

// numberChars counts the characters of text[i:j], a short run of base64
// characters, that are number literals standing as words: the run's
// words are split at '+', '/' and '-', which are not word characters; a
// decimal number ending the run takes a point and the digits after it,
// and next is where reading goes on, past them.
func numberChars(text string, i, j int) (n, next int) {
	next = j
	for w := i; w < j; {
		if !isWordChar(text[w]) {
			w++
			continue
		}
		e := w
		for e < j && isWordChar(text[e]) {
			e++
		}
		word := text[w:e]
		switch {
		case len(word) > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X') && isHex(word[2:]):
			n += countedNumber(word)
		case isDigits(word):
			// 3.14: the point and the digits after it, when a word ends
			// there (the run ends at the point, which is not base64).
			end := e
			if e == j && e+1 < len(text) && text[e] == '.' && isDigit(text[e+1]) {
				f := e + 1
				for f < len(text) && isDigit(text[f]) {
					f++
				}
				if f == len(text) || !isWordChar(text[f]) {
					end, next = f, f
				}
			}
			n += countedNumber(text[w:end])
		}
		w = e
	}
	return n, next
}

// countedNumber is how many characters of a number literal count: all of
// it, but none of one as long as a base64 run that does not mix cases and
// digits (the digits of pi are a text, not a table).
func countedNumber(num string) int {
	if len(num) >= minEncodedRun && !mixed(num) {
		return 0
	}
	return len(num)
}

func isBase64(c byte) bool {
	return isWordChar(c) || c == '+' || c == '/' || c == '-'
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// mixed reports whether a run has digits and letters of both cases, as
// base64 and hex (digits and letters) do and identifiers rarely do.
func mixed(s string) bool {
	var digit, upper, lower bool
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		}
	}
	return digit && (upper || lower) && (upper && lower || isHex(s))
}

func isHex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789abcdefABCDEF") == ""
}

func punctuation(s string) int {
	n := 0
	for _, c := range s {
		switch c {
		case ',', '{', '}', '[', ']', '(', ')', ';', '"', '\'', '`':
			n++
		}
	}
	return n
}
