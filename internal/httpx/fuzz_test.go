package httpx

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzEvents: any byte stream parses without a panic, and no event's data
// holds a line break the stream did not send within one event.
func FuzzEvents(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "data: a\r\ndata: b\r\n\r\n", ": c\nevent: x\n", "data:[DONE]", "\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n := 0
		for d, err := range Events(strings.NewReader(in)) {
			if err != nil {
				return
			}
			n++
			if bytes.Contains(d, []byte("\r")) && !strings.Contains(in, "\r") {
				t.Errorf("event %q", d)
			}
		}
		if n > strings.Count(in, "data:") {
			t.Errorf("%d events from %d data lines", n, strings.Count(in, "data:"))
		}
	})
}
