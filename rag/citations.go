package rag

import (
	"slices"
	"strconv"
	"strings"
)

// Citation markers are "[n]" or "[n, m, …]" with n the number of a passage
// sent with the question. Markers inside code (inline `…` spans and fenced
// blocks) are text, not citations. A marker naming no passage is removed
// with the spaces before it; one naming some valid and some invalid
// passages keeps the valid ones.
//
// The cleaning is a left-to-right scan whose decisions depend only on what
// came before and on the marker itself, so a streamed answer can be cleaned
// as it arrives (citeStream) and come out exactly as the whole answer
// cleaned at once (cleanMarkers).

// maxMarkerLen bounds how far past a '[' a marker may run; longer brackets
// are text.
const maxMarkerLen = 40

// cleanMarkers returns text with invalid markers removed and the valid
// passage numbers it cites, ascending and unique. valid reports whether n
// names a passage.
func cleanMarkers(text string, valid func(n int) bool) (string, []int) {
	var b strings.Builder
	b.Grow(len(text))
	cited := map[int]bool{}
	fence := false
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line = text[:i+1]
		}
		text = text[len(line):]
		if isFence(line) {
			fence = !fence
			b.WriteString(line)
			continue
		}
		if fence {
			b.WriteString(line)
			continue
		}
		cleanLine(&b, line, valid, cited)
	}
	nums := make([]int, 0, len(cited))
	for n := range cited {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	return b.String(), nums
}

// isFence reports whether a line opens or closes a fenced code block: up to
// three spaces, then ``` or ~~~.
func isFence(line string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
}

// cleanLine writes one line outside fences, handling inline code spans (a
// run of n backticks opens a span closed by a run of exactly n; spans end
// with the line).
func cleanLine(b *strings.Builder, line string, valid func(int) bool, cited map[int]bool) {
	code := 0 // length of the backtick run that opened the current span
	for i := 0; i < len(line); {
		c := line[i]
		if c == '`' {
			j := i
			for j < len(line) && line[j] == '`' {
				j++
			}
			switch run := j - i; {
			case code == 0:
				code = run
			case code == run:
				code = 0
			}
			b.WriteString(line[i:j])
			i = j
			continue
		}
		if c == '[' && code == 0 {
			if end, nums, ok := parseMarker(line[i:]); ok {
				var keep []string
				for _, n := range nums {
					if valid(n) {
						keep = append(keep, strconv.Itoa(n))
						cited[n] = true
					}
				}
				if len(keep) == 0 {
					trimTrailingBlanks(b)
				} else {
					b.WriteString("[" + strings.Join(keep, ", ") + "]")
				}
				i += end
				continue
			}
		}
		b.WriteByte(c)
		i++
	}
}

// parseMarker reads a marker at the start of s ("[1]", "[2, 3]") and
// returns its length and numbers.
func parseMarker(s string) (int, []int, bool) {
	end := strings.IndexByte(s, ']')
	if end < 0 || end > maxMarkerLen {
		return 0, nil, false
	}
	var nums []int
	for part := range strings.SplitSeq(s[1:end], ",") {
		part = strings.TrimSpace(part)
		if part == "" || len(part) > 4 {
			return 0, nil, false
		}
		n := 0
		for _, r := range part {
			if r < '0' || r > '9' {
				return 0, nil, false
			}
			n = n*10 + int(r-'0')
		}
		nums = append(nums, n)
	}
	return end + 1, nums, true
}

func trimTrailingBlanks(b *strings.Builder) {
	s := b.String()
	t := strings.TrimRight(s, " \t")
	if len(t) != len(s) {
		b.Reset()
		b.WriteString(t)
	}
}

// citeStream cleans an answer as it streams: each call to add returns the
// part of the cleaned answer that can no longer change. What could still
// change is held back: a '[' that may open a marker, blanks that a removed
// marker would take with it, a backtick run that may grow, and the start of
// a line that may become a fence.
type citeStream struct {
	valid   func(int) bool
	raw     strings.Builder
	emitted int // bytes of the cleaned stable prefix already returned
}

func (s *citeStream) add(delta string) string {
	s.raw.WriteString(delta)
	raw := s.raw.String()
	clean, _ := cleanMarkers(raw[:stablePrefix(raw)], s.valid)
	if len(clean) <= s.emitted {
		return ""
	}
	out := clean[s.emitted:]
	s.emitted = len(clean)
	return out
}

// finish returns the rest of the cleaned answer once the stream has ended.
func (s *citeStream) finish() string {
	clean, _ := cleanMarkers(s.raw.String(), s.valid)
	out := clean[min(s.emitted, len(clean)):]
	s.emitted = len(clean)
	return out
}

// stablePrefix returns how much of raw can be cleaned without knowing what
// follows.
func stablePrefix(raw string) int {
	lineStart := strings.LastIndexByte(raw, '\n') + 1
	tail := raw[lineStart:]
	// A line that may still turn into a fence.
	if t := strings.TrimLeft(tail, " "); len(tail)-len(t) <= 3 && len(t) < 3 && strings.Trim(t, "`~") == "" {
		return lineStart
	}
	end := len(raw)
	// A backtick run that may grow.
	for end > lineStart && raw[end-1] == '`' {
		end--
	}
	// A '[' that may open a marker.
	if i := strings.LastIndexByte(raw[lineStart:end], '['); i >= 0 {
		open := lineStart + i
		rest := raw[open+1 : end]
		if len(rest) < maxMarkerLen && strings.Trim(rest, "0123456789, \t") == "" {
			end = open
		}
	}
	// Blanks a removed marker would take with it.
	for end > lineStart && (raw[end-1] == ' ' || raw[end-1] == '\t') {
		end--
	}
	return end
}
