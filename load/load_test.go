package load

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry/document"
)

// tree writes files (path → content) under a new directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func walkAll(t *testing.T, l *Loader, roots ...string) (names []string, errs map[string]error, results []Result) {
	t.Helper()
	errs = map[string]error{}
	err := l.Walk(context.Background(), roots, func(r Result) error {
		names = append(names, r.Source.Name)
		if r.Err != nil {
			errs[r.Source.Name] = r.Err
		}
		results = append(results, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, errs, results
}

func TestWalkSkipsAndIgnores(t *testing.T) {
	root := tree(t, map[string]string{
		"README.md":             "# Hello\n",
		"docs/guide.txt":        "guide",
		"docs/.hidden.txt":      "secret",
		".git/config":           "x",
		"node_modules/x/a.js":   "x",
		"build/out.txt":         "x",
		"sub/vendor/v.go":       "package v",
		"src/main.go":           "package main",
		"src/gen/big.txt":       "generated",
		"src/keep.log":          "kept by negation",
		"src/drop.log":          "ignored",
		".gitignore":            "*.log\n!keep.log\n/src/gen/\n",
		"src/.gitignore":        "local.txt\n",
		"src/local.txt":         "ignored below src",
		"local.txt":             "not ignored at the root",
		"__pycache__/m.pyc":     "x",
		"docs/deep/a/b/c.md":    "# deep\n",
		"docs/tables/data.csv":  "name,age\nada,36\n",
		"docs/objects/o.jsonl":  "{\"id\":\"1\",\"title\":\"One\"}\n",
		"dist/bundle.js":        "x",
		"venv/lib/site.py":      "x",
		"docs/build-notes.md":   "# not a build folder\n",
		"docs/img/logo.png.txt": "png-ish text",
	})
	names, errs, _ := walkAll(t, New(Options{}), root)
	want := []string{"README.md", "docs/build-notes.md", "docs/deep/a/b/c.md", "docs/guide.txt", "docs/img/logo.png.txt",
		"docs/objects/o.jsonl", "docs/tables/data.csv", "local.txt", "src/keep.log", "src/main.go"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("walked\n %v\nwant\n %v", names, want)
	}
	if len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}
	// A skipped folder given as the root itself is read.
	names, _, _ = walkAll(t, New(Options{}), filepath.Join(root, "build"))
	if !reflect.DeepEqual(names, []string{"out.txt"}) {
		t.Errorf("build root: %v", names)
	}
	names, _, _ = walkAll(t, New(Options{NoGitignore: true}), filepath.Join(root, "src"))
	if len(names) != 5 {
		t.Errorf("without gitignore: %v", names)
	}
}

func TestSymlinksStayInsideRoot(t *testing.T) {
	outside := tree(t, map[string]string{"secret.txt": "outside"})
	root := tree(t, map[string]string{"a.txt": "inside", "dir/b.txt": "b"})
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "leak.txt"))
	os.Symlink(filepath.Join(root, "a.txt"), filepath.Join(root, "alias.txt"))
	os.Symlink(outside, filepath.Join(root, "outdir"))
	names, _, _ := walkAll(t, New(Options{}), root)
	want := []string{"a.txt", "alias.txt", "dir/b.txt"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("walked %v, want %v", names, want)
	}
}

// TestSymlinkRoots: a root named as a symbolic link is followed, to a
// folder (walked with the names of a plain folder, its own links under the
// usual rules) or a file (named as written); a link that leads nowhere is
// an error, never an empty walk.
func TestSymlinkRoots(t *testing.T) {
	outside := tree(t, map[string]string{"secret.md": "outside"})
	base := tree(t, map[string]string{"real/a.md": "# A\n\nalpha\n", "real/sub/b.md": "# B\n\nbeta\n", "real/node_modules/x.md": "skipped"})
	real := filepath.Join(base, "real")
	link := func(target, name string) string {
		t.Helper()
		p := filepath.Join(base, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link(filepath.Join(outside, "secret.md"), "real/leak.md")
	abs := link(real, "abs")
	tests := []struct {
		name, root string
		want       []string // source names
		paths      []string // Result.Path of each
		err        string
	}{
		{"folder", abs, []string{"a.md", "sub/b.md"}, []string{filepath.Join(abs, "a.md"), filepath.Join(abs, "sub", "b.md")}, ""},
		{"relative link", link("real", "rel"), []string{"a.md", "sub/b.md"}, []string{filepath.Join(base, "rel", "a.md"), filepath.Join(base, "rel", "sub", "b.md")}, ""},
		{"link to a link", link(abs, "chain"), []string{"a.md", "sub/b.md"}, []string{filepath.Join(base, "chain", "a.md"), filepath.Join(base, "chain", "sub", "b.md")}, ""},
		{"file", link(filepath.Join(real, "a.md"), "one.md"), []string{filepath.ToSlash(filepath.Join(base, "one.md"))}, []string{filepath.Join(base, "one.md")}, ""},
		{"dangling", link(filepath.Join(base, "gone"), "dangling"), nil, nil, "no such file"},
	}
	l := New(Options{})
	defer l.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var names, paths []string
			err := l.Walk(context.Background(), []string{tt.root}, func(r Result) error {
				if r.Err != nil {
					t.Errorf("%s: %v", r.Source.Name, r.Err)
				}
				if len(r.Docs) == 0 {
					t.Errorf("%s: no documents", r.Source.Name)
				}
				names, paths = append(names, r.Source.Name), append(paths, r.Path)
				return nil
			})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("walk %s = %v, %v; want an error with %q", tt.root, names, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(names, tt.want) || !reflect.DeepEqual(paths, tt.paths) {
				t.Errorf("walk %s = %v %v, %v; want %v %v", tt.root, names, paths, err, tt.want, tt.paths)
			}
		})
	}
}

func TestPerFileErrors(t *testing.T) {
	root := tree(t, map[string]string{
		"good.md":       "# fine\n",
		"fake.pdf":      "just text",
		"bin.dat":       "\x00\x01\x02",
		"big.txt":       strings.Repeat("x", 2000),
		"broken.json":   "{\"a\":",
		"zip.docx":      "PK\x03\x04notreally",
		"renamed.txt":   "%PDF-1.7 pretending",
		"after/last.md": "# still read\n",
	})
	_, errs, results := walkAll(t, New(Options{MaxFileSize: 1000}), root)
	for _, name := range []string{"fake.pdf", "bin.dat", "big.txt", "broken.json", "zip.docx", "renamed.txt"} {
		err, ok := errs[name]
		if !ok {
			t.Errorf("%s: no error", name)
			continue
		}
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v does not name the file", name, err)
		}
	}
	if !errors.Is(errs["big.txt"], ErrSkipped) || !errors.Is(errs["bin.dat"], ErrSkipped) {
		t.Errorf("size and binary skips should be ErrSkipped: %v / %v", errs["big.txt"], errs["bin.dat"])
	}
	var kinds []Kind
	for _, r := range results {
		if r.Source.Name == "renamed.txt" {
			kinds = append(kinds, r.Kind)
		}
		if r.Err == nil && (len(r.Docs) == 0 || r.Hash == "") {
			t.Errorf("%s: read without documents or hash", r.Source.Name)
		}
	}
	if !reflect.DeepEqual(kinds, []Kind{KindPDF}) {
		t.Errorf("a PDF named .txt was read as %v", kinds)
	}
}

func TestDuplicateSourceNames(t *testing.T) {
	a := tree(t, map[string]string{"same.md": "a"})
	b := tree(t, map[string]string{"same.md": "b"})
	err := New(Options{}).Walk(context.Background(), []string{a, b}, func(Result) error { return nil })
	if err == nil || !strings.Contains(err.Error(), filepath.Join(a, "same.md")) || !strings.Contains(err.Error(), filepath.Join(b, "same.md")) {
		t.Errorf("duplicate source names: %v", err)
	}
}

func TestTextReader(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "\xef\xbb\xbfline one\r\nline two\r\n"})
	_, _, res := walkAll(t, New(Options{}), root)
	d := res[0].Docs[0]
	if d.Content != "line one\nline two\n" || d.SourceType != "file" || d.SourceName != "a.txt" || d.ID != "" {
		t.Errorf("document %+v", d)
	}
	if d.Provenance.Source != "a.txt" {
		t.Errorf("provenance %+v", d.Provenance)
	}
}

func TestObjects(t *testing.T) {
	root := tree(t, map[string]string{
		"o.json": `[{"id":7,"name":"Widget","price":9.5,"tags":["a","b"],"@self":{"register":"shop","id":"x-7"}},
			{"summary":"No id here","count":2},
			{"n":1}]`,
		"l.jsonl": "{\"title\":\"First\",\"body\":\"text\"}\n\n{\"code\":\"short\"}\n",
	})
	_, errs, res := walkAll(t, New(Options{}), root)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	byName := map[string]Result{}
	for _, r := range res {
		byName[r.Source.Name] = r
	}
	docs := byName["o.json"].Docs
	if len(docs) != 3 {
		t.Fatalf("%d objects", len(docs))
	}
	w := docs[0]
	if w.Content != "id: 7\nname: Widget\nprice: 9.5\ntags: [\"a\",\"b\"]\n" {
		t.Errorf("rendered %q", w.Content)
	}
	if w.Metadata["object_id"] != "7" || w.Metadata["title"] != "Widget" || w.Metadata["register"] != "shop" || w.Metadata["self_id"] != "x-7" {
		t.Errorf("metadata %v", w.Metadata)
	}
	if docs[1].Metadata["title"] != "No id here" || docs[1].Metadata["object_id"] != "2" {
		t.Errorf("second object %v", docs[1].Metadata)
	}
	if docs[2].Metadata["title"] != "Object #3" {
		t.Errorf("third object title %v", docs[2].Metadata["title"])
	}
	l := byName["l.jsonl"].Docs
	if len(l) != 2 || l[0].Metadata["title"] != "First" || l[1].Metadata["title"] != "short" || l[1].Provenance.LineStart != 3 {
		t.Errorf("jsonl %v / %v", l[0].Metadata, l[1])
	}
}

func TestCSV(t *testing.T) {
	root := tree(t, map[string]string{
		"t.csv": "name,role,notes\nAda,engineer,\"wrote, the first\nprogram\"\n,,\nGrace,admiral,\n",
		"t.tsv": "a\tb\n1\t2\n",
	})
	_, errs, res := walkAll(t, New(Options{}), root)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	rows := res[0].Docs
	if len(rows) != 2 || rows[0].Content != "name: Ada\nrole: engineer\nnotes: wrote, the first\nprogram\n" || rows[1].Metadata["row"] != int64(3) {
		t.Errorf("rows %q / %v", rows[0].Content, rows[1].Metadata)
	}
	if rows[1].Provenance.LineStart != 5 {
		t.Errorf("row line %d", rows[1].Provenance.LineStart)
	}
	if res[1].Docs[0].Content != "a: 1\nb: 2\n" {
		t.Errorf("tsv %q", res[1].Docs[0].Content)
	}
	_, _, res = walkAll(t, New(Options{CSVPerFile: true}), filepath.Join(root, "t.csv"))
	if len(res[0].Docs) != 1 || !strings.Contains(res[0].Docs[0].Content, "Grace") {
		t.Errorf("per file: %v", res[0].Docs)
	}
}

func TestGitignoreGlobs(t *testing.T) {
	rules := parseGitignore("", []byte("# comment\n*.tmp\n/anchored.txt\nlogs/\n**/deep/*.bin\n!important.tmp\ndocs/**/draft-*\n"))
	tests := []struct {
		path  string
		dir   bool
		match bool
	}{
		{"a.tmp", false, true}, {"x/y/a.tmp", false, true}, {"important.tmp", false, false},
		{"anchored.txt", false, true}, {"x/anchored.txt", false, false},
		{"logs", true, true}, {"logs", false, false}, {"x/logs", true, true},
		{"a/deep/x.bin", false, true}, {"deep/x.bin", false, true}, {"a/deep/x/y.bin", false, false},
		{"docs/a/b/draft-1.md", false, true}, {"docs/draft-2.md", false, true}, {"other/draft-3.md", false, false},
	}
	for _, tt := range tests {
		if got := ignored(rules, tt.path, tt.dir); got != tt.match {
			t.Errorf("%s (dir %v): ignored = %v", tt.path, tt.dir, got)
		}
	}
}

func TestSourceTypeOf(t *testing.T) {
	for p, want := range map[string]string{
		"catalog/products.json": document.SourceObject, "events.JSONL": document.SourceObject, "x.ndjson": document.SourceObject,
		"guide.md": document.SourceFile, "report.pdf": document.SourceFile, "json": document.SourceFile, "config.json.bak": document.SourceFile,
	} {
		if got := SourceTypeOf(p); got != want {
			t.Errorf("SourceTypeOf(%q) = %q, want %q", p, got, want)
		}
	}
	if !FileBacked(document.Source{Type: document.SourceObject, Name: "a.json"}, "/docs/a.json") ||
		FileBacked(document.Source{Type: document.SourceObject, Name: "p-1"}, "") ||
		!FileBacked(document.Source{Type: document.SourceFile, Name: "a.md"}, "") {
		t.Error("FileBacked")
	}
}
