package load

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestOddRealFiles: the files real trees hold beside the ordinary ones
// each end as one outcome of their own, never a failure of a readable file:
// legacy encodings are converted and say so, JSON of every shape is read
// as what it is, an empty JSON file has no text, and bytes that are not
// text are skipped as binary even without a NUL.
func TestOddRealFiles(t *testing.T) {
	tests := []struct {
		file string
		// want is text a document must hold; note, the Result's note.
		want, note string
		docs       int
		err        error
		why        string // in the error's text
	}{
		{file: "latin1.txt", want: "Café crème: the menú of the day.\nA naïve résumé.", note: "converted from", docs: 1},
		{file: "koi8.txt", want: "Привет, мир.", note: "converted from KOI8-R", docs: 1},
		{file: "utf16.txt", want: "Hello from UTF-16, café.", note: "converted from UTF-16LE", docs: 1},
		{file: "events.json", want: "text: second event", docs: 2},
		{file: "strings.json", want: `["alpha","beta","gamma"]`, docs: 1},
		{file: "empty.json", err: ErrNoText},
		{file: "blank.json", err: ErrNoText},
		{file: "noise.txt", err: ErrSkipped},
		// Data, not prose: each skipped with its reason.
		{file: "cert.pem", err: ErrSkipped, why: "a certificate or key (PEM)"},
		{file: "blob.txt", err: ErrSkipped, why: "encoded data"},
		{file: "table.txt", err: ErrSkipped, why: "encoded data"},
		{file: "go.sum", err: ErrSkipped, why: "a lock file"},
		{file: "zerrors.go", err: ErrSkipped, why: "generated code"},
		{file: "bundle.min.js", err: ErrSkipped, why: "minified"},
	}
	l := New(Options{})
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, errs, results := walkAll(t, l, filepath.Join("testdata", "odd", tt.file))
			if len(results) != 1 {
				t.Fatalf("%d results", len(results))
			}
			r := results[0]
			if tt.err != nil {
				if !errors.Is(r.Err, tt.err) || !strings.Contains(r.Err.Error(), tt.why) {
					t.Fatalf("err = %v; want %v with %q", r.Err, tt.err, tt.why)
				}
				if tt.why != "" {
					// ingest.keep_data reads it.
					_, _, kept := walkAll(t, New(Options{KeepData: true}), filepath.Join("testdata", "odd", tt.file))
					if kept[0].Err != nil || len(kept[0].Docs) == 0 {
						t.Errorf("with KeepData: %v, %d documents", kept[0].Err, len(kept[0].Docs))
					}
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("err = %v", r.Err)
			}
			if len(r.Docs) != tt.docs {
				t.Fatalf("%d documents; want %d", len(r.Docs), tt.docs)
			}
			var all []string
			for _, d := range r.Docs {
				all = append(all, d.Content)
			}
			if text := strings.Join(all, "\n"); !strings.Contains(text, tt.want) {
				t.Errorf("text %q does not hold %q", text, tt.want)
			}
			if !strings.Contains(r.Note, tt.note) || tt.note == "" && r.Note != "" {
				t.Errorf("note %q; want one with %q", r.Note, tt.note)
			}
		})
	}
}

// TestEncodedShare: prose and code score far below the line a chunk is
// left out at (0.8), keys, dumps and number tables near 1.
func TestEncodedShare(t *testing.T) {
	tests := []struct {
		name string
		text string
		low  bool
	}{
		{"prose", "Refunds are paid within 5 days of the return, 30 days at most, since 2024.", true},
		{"code", "func Lookup(i int) uint64 {\n\treturn p256Table[i] + 0x10\n}\n", true},
		{"a long identifier", "TestReadingAVeryLongFunctionNameThatGoesOnAndOnForever(t)", true},
		{"a sha256 in a paragraph", "Download the archive from the release page and check it before you unpack it. The file's SHA-256 is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, as the release notes list it; a different sum means the download was cut short or changed on the way, so fetch it again.", true},
		{"base64", "MIIBkTCB+wIJAKHBfpegPjMCMA0GCSqGSIb3DQEBCwUAMBExDzANBgNVBAMMBnF1YXJyeTAeFw0yNjEyMDgwMDAwMDBa", false},
		{"hex escapes", `"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\xec\x5d\x6b\x73\xdb\x36"`, false},
		{"a number table", "0x0000000000000001, 0xffffffff00000001, 0x00000000fffffffe, 0x0000000100000000,\n0x79e730d418a9143c, 0x75ba95fc5fedb601, 0x79fb732b77622510, 0x18905f76a53755c6,", false},
	}
	for _, tt := range tests {
		if got := EncodedShare(tt.text); (got < 0.5) != tt.low || (!tt.low && got <= 0.8) {
			t.Errorf("%s: EncodedShare = %.2f", tt.name, got)
		}
	}
}
