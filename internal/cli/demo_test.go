package cli_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	entries, err := os.ReadDir("../../docs")
	if err != nil {
		t.Fatal(err)
	}
	n := len(entries)
	code, out, errOut := run(t, "", "demo", "../../docs")
	if code != 0 {
		t.Fatalf("demo: %d %q", code, errOut)
	}
	for _, want := range []string{
		fmt.Sprintf("%d files: %d written", n, n),
		"ingestion.md · Ingestion › Interruptions and crashes",
		"filters.md · Filters › The rules",
		"stores.md · Stores › PostgreSQL",
		fmt.Sprintf("0 written, %d unchanged", n),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "«the»") {
		t.Error("a stop word is highlighted")
	}
}
