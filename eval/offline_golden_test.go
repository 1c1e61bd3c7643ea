package eval_test

import (
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/rag"
)

// offlineGolden is the golden set of offline answers: questions over Go's
// own documentation ($GOROOT/doc) and Quarry's docs/, with the sentences
// that answer them (eval/testdata/golden/README.md).
const offlineGolden = "testdata/golden/offline.jsonl"

var tagRE = regexp.MustCompile(`<[^>]*>`)

// readable is a source as a person reads it: HTML without its tags and
// entities, Markdown without its markup, spaces collapsed.
func readable(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.HasSuffix(path, ".html") {
		s = html.UnescapeString(tagRE.ReplaceAllString(s, ""))
	}
	return rag.Plain(s)
}

// TestOfflineGoldenProvenance holds the golden set to its sources: every
// answering sentence is in one of its case's sources, as written there.
// A sentence of Quarry's docs that is not is an error — the docs changed
// and the case must follow; one of Go's docs is a skip, for another Go
// release words its documentation its own way.
func TestOfflineGoldenProvenance(t *testing.T) {
	gs, err := eval.LoadGolden(offlineGolden)
	if err != nil {
		t.Fatal(err)
	}
	goDoc := filepath.Join(goroot(t), "doc")
	answerable, unanswerable, drift := 0, 0, 0
	for _, g := range gs {
		if g.Unanswerable {
			unanswerable++
			continue
		}
		answerable++
		if len(g.Answers) == 0 || len(g.Sources) == 0 {
			t.Errorf("%s: an answerable case needs sources and answering sentences", g.ID)
			continue
		}
		for _, a := range g.Answers {
			found, inGo := false, false
			for _, src := range g.Sources {
				path := filepath.Join("..", "docs", src)
				if _, err := os.Stat(path); err != nil {
					path, inGo = filepath.Join(goDoc, src), true
					if _, err := os.Stat(path); err != nil {
						continue
					}
				}
				found = found || strings.Contains(readable(t, path), rag.Plain(a))
			}
			switch {
			case found:
			case inGo:
				drift++
				t.Logf("%s: %q is not in %v under %s", g.ID, a, g.Sources, goDoc)
			default:
				t.Errorf("%s: %q is not in %v under docs/", g.ID, a, g.Sources)
			}
		}
	}
	if answerable != 40 || unanswerable != 10 {
		t.Errorf("%d answerable and %d unanswerable cases, want 40 and 10", answerable, unanswerable)
	}
	if drift > 0 {
		t.Skipf("%d answering sentences are not in this Go release's documentation (%s)", drift, runtime.Version())
	}
}

// goroot is the Go installation the tests run under.
func goroot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}
