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

func nonSpace(b []byte) int {
	n := 0
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			n++
		}
	}
	return n
}

// encodedRun matches what is data inside text: a PEM body line, a run of
// base64 or hex, a string of \x escapes, a number literal.
var encodedRun = regexp.MustCompile(`[A-Za-z0-9+/_-]{48,}={0,2}|(?:\\x[0-9a-fA-F]{2}){12,}|\b0[xX][0-9a-fA-F]+\b|\b[0-9]+(?:\.[0-9]+)?\b`)

// EncodedShare is the share of text's non-space characters that are
// encoded data (base64, hex, \x escapes, number literals), between 0 and
// 1. Prose and code stay far below 0.5; a key, a dump or a table of
// numbers comes near 1. Runs of letters alone (a long identifier) are not
// counted: base64 mixes cases and digits.
func EncodedShare(text string) float64 {
	total := nonSpace([]byte(text))
	if total == 0 {
		return 0
	}
	in := 0
	for _, loc := range encodedRun.FindAllStringIndex(text, -1) {
		run := text[loc[0]:loc[1]]
		if len(run) >= 48 && !strings.HasPrefix(run, `\x`) && !mixed(run) {
			continue
		}
		in += len(run)
	}
	// Punctuation between the numbers of a table (commas, braces) counts
	// with them when numbers are most of what is there.
	if share := float64(in) / float64(total); share < 0.6 {
		return share
	}
	return min(1, float64(in+punctuation(text))/float64(total))
}

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
	return strings.Trim(s, "0123456789abcdefABCDEF") == ""
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
