package load

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/net/html"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/split"
)

// pgDocs is where Debian's postgresql-doc-15 package puts the PostgreSQL
// manual: 1,169 DocBook HTML pages with navigation tables above and below
// the content.
const pgDocs = "/usr/share/doc/postgresql-doc-15/html"

// TestPostgresManual chunks the whole PostgreSQL manual as quarry chunk
// does and checks, page by page, that the main content survives (≥ 95 % of
// its words), that the Prev/Up/Home/Next navigation does not, and that every
// chunk has a heading path.
func TestPostgresManual(t *testing.T) {
	if _, err := os.Stat(pgDocs); err != nil {
		t.Skipf("%s is absent: apt-get install postgresql-doc-15 to run this test", pgDocs)
	}
	if testing.Short() {
		t.Skip("reads 1,169 pages; skipped with -short")
	}
	md, err := split.NewMarkdown(split.MarkdownConfig{})
	if err != nil {
		t.Fatal(err)
	}
	l := New(Options{})
	defer l.Close()
	pages, chunks, headless := 0, 0, 0
	var worst []pageCoverage
	// Navigation text: the row of links, and the page titles of the
	// header and footer rows as lines of their own.
	nav := regexp.MustCompile(`\bPrev\b|\bHome\b.*\bNext\b|\bUp\b.*\bHome\b`)
	err = l.Walk(context.Background(), []string{pgDocs}, func(r Result) error {
		if r.Kind != KindHTML {
			return nil
		}
		pages++
		if r.Err != nil {
			t.Errorf("%s: %v", r.Source.Name, r.Err)
			return nil
		}
		cs, err := split.SplitAll(md, r.Docs)
		if err != nil {
			t.Errorf("%s: %v", r.Source.Name, err)
			return nil
		}
		if len(cs) == 0 {
			t.Errorf("%s: no chunks", r.Source.Name)
		}
		chunks += len(cs)
		var all strings.Builder
		for _, c := range cs {
			if len(c.Provenance.HeadingPath) == 0 {
				headless++
				if headless <= 5 {
					t.Errorf("%s: chunk %d has no heading path: %.120q", r.Source.Name, c.Provenance.ChunkIndex, c.Content)
				}
			}
			if loc := nav.FindStringIndex(c.Content); loc != nil {
				t.Errorf("%s: chunk %d holds navigation text %q", r.Source.Name, c.Provenance.ChunkIndex, c.Content[loc[0]:loc[1]])
			}
			for _, h := range c.Provenance.HeadingPath {
				if strings.HasSuffix(h, `\#`) || strings.HasSuffix(h, "¶") {
					t.Errorf("%s: heading %q ends in a stray mark", r.Source.Name, h)
				}
			}
			if strings.IndexFunc(c.Content, document.NonCharacter) >= 0 || strings.Contains(c.Content, "Ã©") || strings.Contains(c.Content, "â€") {
				t.Errorf("%s: chunk %d holds a non-character or mojibake: %.120q", r.Source.Name, c.Provenance.ChunkIndex, c.Content)
			}
			all.WriteString(c.Content)
			all.WriteByte('\n')
		}
		want, err := mainWords(r.Path)
		if err != nil {
			t.Fatal(err)
		}
		cov := coverage(want, words(all.String()))
		worst = append(worst, pageCoverage{r.Source.Name, cov, total(want)})
		if cov < 0.95 {
			t.Errorf("%s: %.1f %% of the %d words of the main content are in its chunks", r.Source.Name, 100*cov, total(want))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages < 1000 {
		t.Errorf("read %d pages, expected the whole manual", pages)
	}
	sort.Slice(worst, func(i, j int) bool { return worst[i].cov < worst[j].cov })
	sum := 0.0
	for _, w := range worst {
		sum += w.cov
	}
	t.Logf("%d pages, %d chunks, %d without heading path; mean coverage %.2f %%", pages, chunks, headless, 100*sum/float64(len(worst)))
	for _, w := range worst[:min(5, len(worst))] {
		t.Logf("lowest coverage: %s %.2f %% of %d words", w.name, 100*w.cov, w.words)
	}
}

type pageCoverage struct {
	name  string
	cov   float64
	words int
}

// mainWords counts the words of a manual page outside its navigation
// blocks, read independently of the reader under test.
func mainWords(p string) (map[string]int, error) {
	f, err := os.Open(filepath.Clean(p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "head", "script", "style":
				return
			}
			for _, a := range n.Attr {
				if a.Key == "class" && (a.Val == "navheader" || a.Val == "navfooter") {
					return
				}
			}
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return words(b.String()), nil
}

// words counts lowercased runs of letters and digits.
func words(s string) map[string]int {
	out := map[string]int{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out[w]++
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// coverage is the share of want's words (with multiplicity) found in got.
func coverage(want, got map[string]int) float64 {
	n, found := 0, 0
	for w, c := range want {
		n += c
		found += min(c, got[w])
	}
	if n == 0 {
		return 1
	}
	return float64(found) / float64(n)
}
