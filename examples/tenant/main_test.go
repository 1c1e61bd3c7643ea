package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestTenantsSeeTheirOwn runs the example: each tenant's answer cites only
// that tenant's document.
func TestTenantsSeeTheirOwn(t *testing.T) {
	out := capture(t, main)
	for _, want := range []string{"acme: Acme refunds are paid within five days. [1] (acme/refunds.md)", "globex: Globex refunds are paid within thirty days. [1] (globex/refunds.md)"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// capture runs fn with standard output into a buffer.
func capture(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		var b bytes.Buffer
		b.ReadFrom(r)
		done <- b.String()
	}()
	fn()
	os.Stdout = stdout
	w.Close()
	return <-done
}
