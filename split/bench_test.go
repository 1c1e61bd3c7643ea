package split_test

import (
	"go/build"
	"os"
	"path/filepath"
	"testing"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/split"
)

// Real documents as inputs: Quarry's Apache-2.0 license (prose), Go's
// GODEBUG guide (Markdown with headings, tables and code) and net/http's
// server.go (a large Go file).
func benchInput(b *testing.B, path string) *document.Document {
	b.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("benchmark input: %v", err)
	}
	return fileDoc(filepath.Base(path), string(text))
}

func runBench(b *testing.B, s split.Splitter, doc *document.Document) {
	b.Helper()
	b.SetBytes(int64(len(doc.Content)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Split(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDelimiter(b *testing.B) {
	runBench(b, mustNew(b, "delimiter", split.Settings{}), benchInput(b, "../LICENSE"))
}

func BenchmarkSentence(b *testing.B) {
	runBench(b, mustNew(b, "sentence", split.Settings{}), benchInput(b, "../LICENSE"))
}

func BenchmarkRecursive(b *testing.B) {
	runBench(b, mustNew(b, "recursive", split.Settings{}), benchInput(b, "../LICENSE"))
}

func BenchmarkMarkdown(b *testing.B) {
	runBench(b, mustNew(b, "markdown", split.Settings{}), benchInput(b, filepath.Join(build.Default.GOROOT, "doc", "godebug.md")))
}

func BenchmarkCode(b *testing.B) {
	runBench(b, mustNew(b, "code", split.Settings{}), benchInput(b, filepath.Join(build.Default.GOROOT, "src", "net", "http", "server.go")))
}
