package load

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gogs/chardet"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/unicode"
)

// sniffWindow is how much of a file the binary and encoding tests look at:
// enough to see a file's character, little enough to cost nothing.
const sniffWindow = 64 << 10

// controlBytes counts the bytes in b that no text holds: C0 controls other
// than tab, line feed, vertical tab, form feed, carriage return, backspace
// (overstruck manual pages) and escape (coloured logs), and DEL.
func controlBytes(b []byte) int {
	n := 0
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\v' && c != '\f' && c != '\r' && c != '\b' && c != 0x1b || c == 0x7f {
			n++
		}
	}
	return n
}

// looksBinary reports whether data is not text: a NUL byte, or more than
// one byte in a hundred that no text holds (compressed data without a
// NUL, a short binary test file). UTF-16 with a byte-order mark is text.
func looksBinary(data []byte) bool {
	head := data[:min(len(data), sniffWindow)]
	if bytes.HasPrefix(head, []byte{0xff, 0xfe}) || bytes.HasPrefix(head, []byte{0xfe, 0xff}) {
		return false
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	return controlBytes(head)*100 > len(head)
}

// asUTF8 is the bytes a reader of kind gets: a text kind's bytes in UTF-8,
// converted from a legacy encoding when they are not (toUTF8), with the
// note saying so.
func asUTF8(kind Kind, data []byte) ([]byte, string, error) {
	if kind == KindPDF || kind == KindDOCX || utf8.Valid(data) {
		return data, "", nil
	}
	return toUTF8(data)
}

// toUTF8 converts text in a legacy encoding to UTF-8, and says which it
// took: UTF-16 by its byte-order mark, else the encoding chardet finds
// most likely, else Windows-1252 for text that is mostly ASCII (Latin-1's
// superset, the commonest legacy encoding of Western text) unless more
// than three bytes in ten are outside ASCII. Bytes that fit
// none are binary: errBinary. Charset names are read as the WHATWG
// Encoding standard reads them (htmlindex), so ISO-8859-1 is decoded as
// Windows-1252, as browsers do.
func toUTF8(data []byte) ([]byte, string, error) {
	var enc encoding.Encoding
	name := ""
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		enc, name = unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM), "UTF-16LE"
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		enc, name = unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM), "UTF-16BE"
	default:
		head := data[:min(len(data), sniffWindow)]
		if r, err := chardet.NewTextDetector().DetectBest(head); err == nil && r.Confidence >= 30 && !strings.EqualFold(r.Charset, "UTF-8") {
			if e, err := htmlindex.Get(r.Charset); err == nil && e != nil {
				enc, name = e, r.Charset
			}
		}
		if enc == nil {
			high := 0
			for _, c := range head {
				if c >= 0x80 {
					high++
				}
			}
			if high*10 > len(head)*3 {
				return nil, "", errBinary
			}
			enc, name = charmap.Windows1252, "windows-1252"
		}
	}
	out, err := enc.NewDecoder().Bytes(data)
	if err != nil || !utf8.Valid(out) {
		return nil, "", errBinary
	}
	// A decoding that needed many replacement characters was a guess
	// about bytes that are not text.
	if bad := bytes.Count(out, []byte("\uFFFD")); bad*100 > utf8.RuneCount(out) {
		return nil, "", errBinary
	}
	return out, fmt.Sprintf("converted from %s to UTF-8", name), nil
}

// errBinary is content that is neither UTF-8 nor text in an encoding
// Quarry can tell.
var errBinary = fmt.Errorf("%w: binary content of no supported format", ErrSkipped)
