package httpx

import (
	"strings"
	"testing"
)

func TestEvents(t *testing.T) {
	in := ": comment\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata: one\ndata: two\n\nid: 3\n\ndata: [DONE]"
	var got []string
	for d, err := range Events(strings.NewReader(in)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(d))
	}
	want := []string{`{"a":1}`, "one\ntwo", "[DONE]"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
}
