package load

import (
	"context"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/split"
)

// htmlChunks reads an HTML file and cuts it as quarry chunk does.
func htmlChunks(t *testing.T, name string, data []byte) (*document.Document, []*document.Document) {
	t.Helper()
	docs, err := (&HTMLReader{}).Read(context.Background(), File{Path: name, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("%d documents", len(docs))
	}
	docs[0].SourceType, docs[0].SourceName = "file", name
	md, err := split.NewMarkdown(split.MarkdownConfig{Budget: split.RecursiveConfig{MaxTokens: 80}})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := split.SplitAll(md, docs)
	if err != nil {
		t.Fatal(err)
	}
	return docs[0], chunks
}

func TestHTMLArticle(t *testing.T) {
	data, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	doc, chunks := htmlChunks(t, "article.html", data)
	if doc.Metadata["title"] != "Refund policy | Acme Help Center" {
		t.Errorf("title %v", doc.Metadata["title"])
	}
	// Navigation, the site header and footer, the sidebar, breadcrumbs,
	// sharing, comments, the cookie banner and scripts each carry a marker.
	marker := regexp.MustCompile(`[A-Z]+MARKER|Skip to content|Privacy`)
	headings := map[string][]string{}
	var all strings.Builder
	for _, c := range chunks {
		if m := marker.FindString(c.Content); m != "" {
			t.Errorf("chunk %d holds %q: %q", c.Provenance.ChunkIndex, m, c.Content)
		}
		if len(c.Provenance.HeadingPath) == 0 {
			t.Errorf("chunk %d has no heading path", c.Provenance.ChunkIndex)
		}
		first := strings.SplitN(strings.TrimSpace(c.Content), "\n", 2)[0]
		headings[first] = c.Provenance.HeadingPath
		all.WriteString(c.Content)
	}
	for _, want := range []string{
		"Acme refunds any order within thirty days of delivery.",
		"press **Request refund**",
		"- Orders paid by card are refunded to the card.",
		"| Card | 5 days |",
		"Photo of a damaged parcel A clear photo",
	} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("chunks lack %q:\n%s", want, all.String())
		}
	}
	if got, want := headings["### Partial refunds"], []string{"How refunds work", "Requesting a refund", "Partial refunds"}; !reflect.DeepEqual(got, want) {
		t.Errorf("heading path %q, want %q", got, want)
	}
}

func TestHTMLManualPage(t *testing.T) {
	data, err := os.ReadFile("testdata/manual.html")
	if err != nil {
		t.Fatal(err)
	}
	_, chunks := htmlChunks(t, "manual.html", data)
	var paths [][]string
	var all strings.Builder
	for _, c := range chunks {
		if regexp.MustCompile(`\b(Prev|Next|Home|Up)\b|5\.5\. System Columns|Generated Columns`).MatchString(c.Content) {
			t.Errorf("navigation in chunk %q", c.Content)
		}
		paths = append(paths, c.Provenance.HeadingPath)
		all.WriteString(c.Content)
	}
	want := [][]string{
		{"5.4. Constraints"},
		{"5.4. Constraints", "5.4.1. Check Constraints"},
		{"5.4. Constraints", "5.4.2. Not-Null Constraints"},
	}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("heading paths %q, want %q", paths, want)
	}
	if !strings.Contains(all.String(), "price numeric CHECK (price > 0)") {
		t.Errorf("code lost or escaped:\n%s", all.String())
	}
}

func TestHTMLKeepsPageHeading(t *testing.T) {
	body := strings.Repeat("Quarries cut stone from the hillside in terraces that follow the grain of the rock. ", 12)
	tests := []struct {
		name, page, first, title string
	}{
		{"h1 outside the article", `<html><head><title>Stone | Site</title></head><body><div class="masthead"><h1>Cutting stone</h1></div>` +
			`<div class="content"><p>` + body + `</p><h2>Tools</h2><p>` + body + `</p></div></body></html>`, "# Cutting stone", "Stone | Site"},
		{"heading repeating the title", `<html><head><title>Cutting stone</title></head><body><article><h1>Cutting stone</h1><p>` + body + `</p></article></body></html>`,
			"# Cutting stone", "Cutting stone"},
		{"no heading, title only", `<html><head><title>Cutting stone</title></head><body><p>` + body + `</p></body></html>`, "# Cutting stone", "Cutting stone"},
		{"no title, heading only", `<html><body><h2>Cutting stone</h2><p>` + body + `</p></body></html>`, "## Cutting stone", "Cutting stone"},
	}
	for _, tt := range tests {
		doc, chunks := htmlChunks(t, "p.html", []byte(tt.page))
		if !strings.HasPrefix(doc.Content, tt.first+"\n") {
			t.Errorf("%s: content starts %.60q", tt.name, doc.Content)
		}
		if doc.Metadata["title"] != tt.title {
			t.Errorf("%s: title %v", tt.name, doc.Metadata["title"])
		}
		if strings.Count(doc.Content, "Cutting stone") != 1 {
			t.Errorf("%s: heading repeated:\n%s", tt.name, doc.Content)
		}
		for _, c := range chunks {
			if len(c.Provenance.HeadingPath) == 0 || c.Provenance.HeadingPath[0] != "Cutting stone" {
				t.Errorf("%s: chunk heading path %q", tt.name, c.Provenance.HeadingPath)
			}
		}
	}
}

func TestHTMLCharset(t *testing.T) {
	page := "<html><head><meta charset=\"iso-8859-1\"><title>Caf\xe9</title></head><body><h1>Caf\xe9 cr\xe8me</h1><p>Na\xefve text.</p></body></html>"
	docs, err := (&HTMLReader{}).Read(context.Background(), File{Data: []byte(page)})
	if err != nil {
		t.Fatal(err)
	}
	if docs[0].Content != "# Café crème\n\nNaïve text.\n" || docs[0].Metadata["title"] != "Café" {
		t.Errorf("%q %v", docs[0].Content, docs[0].Metadata)
	}
}

func TestHTMLEmptyAndOdd(t *testing.T) {
	for _, page := range []string{"", "<html></html>", "<p>just a fragment</p>", "<table><tr><td>a<td>b</table>", "<<<>>>", "<h1></h1>"} {
		if _, err := (&HTMLReader{}).Read(context.Background(), File{Data: []byte(page)}); err != nil {
			t.Errorf("%q: %v", page, err)
		}
	}
}

// TestHTMLLeavesUnmarkedFurniture checks that blocks no class names as
// furniture, such as a list of other stories, are left out when
// readability finds the article elsewhere.
func TestHTMLLeavesUnmarkedFurniture(t *testing.T) {
	para := "<p>" + strings.Repeat("Terraced quarries follow the grain of the rock, and each bench is cut by hand before the blocks are lowered. ", 4) + "</p>"
	page := `<html><head><title>Benches</title></head><body><div class="wrap">` +
		`<div class="story"><h1>Cutting benches</h1>` + para + para + para + `</div>` +
		`<div class="more"><h3>More stories</h3><ul>` +
		`<li><a href="/a">OTHERSTORY One</a></li><li><a href="/b">OTHERSTORY Two</a></li><li><a href="/c">OTHERSTORY Three</a></li></ul></div>` +
		`</div></body></html>`
	doc, _ := htmlChunks(t, "b.html", []byte(page))
	if strings.Contains(doc.Content, "OTHERSTORY") || !strings.HasPrefix(doc.Content, "# Cutting benches\n") {
		t.Errorf("content:\n%s", doc.Content)
	}
}

// TestHTMLHeadingsKeepTheirText: a heading ending in '#' keeps it ("C#"),
// and permalink glyphs drawn as self-links (GitHub, Node.js, Sphinx) leave
// headings and text.
func TestHTMLHeadingsKeepTheirText(t *testing.T) {
	body := "<p>Enough words in the section to make it a real passage of text.</p>"
	tests := []struct {
		heading, want string
	}{
		{`<h2>Learn C#</h2>`, "Learn C#"},
		{`<h2>F# and C#</h2>`, "F# and C#"},
		{`<h2>Issue #</h2>`, "Issue #"},
		{`<h2>File system<a class="anchor" href="#file-system">#</a></h2>`, "File system"},
		{`<h2 id="x"><a href="#x" aria-hidden="true">#</a> Streams</h2>`, "Streams"},
		{`<h2>Sphinx section<a class="headerlink" href="#s" title="Link to this heading">¶</a></h2>`, "Sphinx section"},
		{`<h2>Section sign<a href="#sec">§</a></h2>`, "Section sign"},
	}
	for _, tt := range tests {
		page := "<html><head><title>Guide</title></head><body><h1>Guide</h1>" + tt.heading + body + "</body></html>"
		_, chunks := htmlChunks(t, "p.html", []byte(page))
		found := false
		for _, c := range chunks {
			hs := c.Provenance.HeadingPath
			if len(hs) > 0 && hs[len(hs)-1] == tt.want {
				found = true
			}
			if strings.ContainsAny(c.Content, "¶§") || strings.Contains(c.Content, `\#`) {
				t.Errorf("%s: chunk text %q", tt.heading, c.Content)
			}
		}
		if !found {
			var got [][]string
			for _, c := range chunks {
				got = append(got, c.Provenance.HeadingPath)
			}
			t.Errorf("%s: heading paths %q, want one ending in %q", tt.heading, got, tt.want)
		}
	}
}

// TestHTMLUTF8WithoutCharset: a page that declares no charset and starts
// with a kilobyte of ASCII is still read as UTF-8 when it is valid UTF-8.
func TestHTMLUTF8WithoutCharset(t *testing.T) {
	page := "<html><body><h1>Menu</h1><p>" + strings.Repeat("plain ascii words ", 120) + "</p><p>Café — naïve, déjà vu.</p></body></html>"
	docs, err := (&HTMLReader{}).Read(context.Background(), File{Path: "p.html", Data: []byte(page)})
	if err != nil {
		t.Fatal(err)
	}
	if text := docs[0].Content; !strings.Contains(text, "Café — naïve, déjà vu.") || strings.Contains(text, "Ã") || strings.Contains(text, "â€") {
		t.Errorf("decoded as %q", text[len(text)-60:])
	}
	// A page that is not valid UTF-8 and declares nothing is still guessed.
	latin := []byte("<html><body><p>caf\xe9 cr\xe8me</p></body></html>")
	docs, err = (&HTMLReader{}).Read(context.Background(), File{Path: "l.html", Data: latin})
	if err != nil || !strings.Contains(docs[0].Content, "café crème") {
		t.Errorf("Windows-1252 page: %v %v", docs, err)
	}
}
