package cli_test

import (
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	code, out, errOut := run(t, "", "demo", "../../docs")
	if code != 0 {
		t.Fatalf("demo: %d %q", code, errOut)
	}
	for _, want := range []string{"6 written", "ingestion.md · Ingestion › Interruptions and crashes", "filters.md · Filters › The rules", "stores.md", "0 written, 6 unchanged"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
