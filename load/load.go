// Package load reads files and folders into documents: clean text with its
// source identity and provenance, ready for splitting.
//
// A Loader walks roots recursively, honouring .gitignore files, skipping
// hidden entries and the build folders of SEMANTICS §6 below each root (a
// root itself is always read, so ./build/html works), never following a
// symbolic link out of its root, and refusing files above a size limit. Each
// file goes to the Reader for its kind, chosen by extension and checked
// against the content (a PDF named .txt is read as a PDF). A file that cannot
// be read yields a per-file error; the walk goes on.
//
// Readers: TextReader (text, Markdown, code), HTMLReader (main content as
// Markdown), PDFReader (text per page, PDFium in WebAssembly, started on the
// first PDF; close the Loader to stop it), DOCXReader (Markdown headings,
// lists, tables as text), ObjectReader (JSON and JSON Lines objects) and
// CSVReader.
package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/quarry-rag/quarry/document"
)

// DefaultMaxFileSize is the size above which files are skipped.
const DefaultMaxFileSize = 50 << 20

// Kind is a file format Quarry reads.
type Kind string

// Kinds of file.
const (
	KindText     Kind = "text"
	KindMarkdown Kind = "markdown"
	KindCode     Kind = "code"
	KindHTML     Kind = "html"
	KindPDF      Kind = "pdf"
	KindDOCX     Kind = "docx"
	KindJSON     Kind = "json"
	KindJSONL    Kind = "jsonl"
	KindCSV      Kind = "csv"
	KindSVG      Kind = "svg"
)

// File is one file handed to a Reader.
type File struct {
	// Path is the file's path as found by the walk.
	Path string
	// Source is the file's identity: sourceType file and its path relative
	// to the walk root.
	Source document.Source
	// Kind is the format the file is read as.
	Kind Kind
	// Data is the file's content.
	Data []byte
}

// Reader turns one file into documents (one for most formats; one per page,
// object or row for others). Documents carry the file's source identity and
// provenance; their ids are left empty for the splitter to assign.
type Reader interface {
	Read(ctx context.Context, f File) ([]*document.Document, error)
}

// Options configure a Loader. Zero values mean the defaults.
type Options struct {
	// MaxFileSize skips larger files with a per-file error, in bytes
	// (DefaultMaxFileSize when 0).
	MaxFileSize int64
	// NoGitignore reads files that .gitignore files exclude.
	NoGitignore bool
	// CSVPerFile makes a CSV file one document instead of one per row.
	CSVPerFile bool
	// CacheDir keeps the compiled PDF engine between runs (a knowledge
	// base's cache/ folder); empty means the quarry folder in
	// os.UserCacheDir. See PDFReader.
	CacheDir string
	// OCR reads scanned PDF pages (NewOCR gives the engine of an
	// ingest.ocr mode); nil reports them as needing OCR.
	OCR OCR
	// Untrusted files come from callers who are not trusted (uploads):
	// their PDFs are read by an engine that a done context stops mid-page
	// (PDFReader.Interruptible), at about three times the time.
	Untrusted bool
	// Readers overrides or adds readers by kind.
	Readers map[Kind]Reader
	// SkipFolders are the folder names a walk does not descend into below
	// a root; nil means DefaultSkipFolders, empty none.
	SkipFolders []string
	// KeepData reads what is data rather than prose or code (lock files,
	// minified bundles, generated code, keys, dumps and number tables;
	// see dataReason), which is otherwise skipped with the reason, and
	// tells ingestion to keep chunks of encoded data (KeepsData).
	KeepData bool
}

// Loader reads files and folders. It is safe for concurrent use. Close it
// to stop the PDF engine once a PDF has started it.
type Loader struct {
	maxSize   int64
	gitignore bool
	keepData  bool
	skipDirs  map[string]bool
	readers   map[Kind]Reader
	custom    map[Kind]bool // kinds read by a reader from Options.Readers
	pdf       *PDFReader
}

// New returns a Loader with the built-in readers for text, Markdown, code,
// HTML, PDF, DOCX, JSON, JSONL and CSV; opt.Readers replaces or adds
// readers by kind. Nothing is started until a file needs it.
func New(opt Options) *Loader {
	maxSize := opt.MaxFileSize
	if maxSize <= 0 {
		maxSize = DefaultMaxFileSize
	}
	// The PDF engine's budgets follow the file size limit, so the one
	// setting people already know (ingest.max_file_size, --max-file-size)
	// is the one that raises them.
	pdf := &PDFReader{CacheDir: opt.CacheDir, MaxMemory: max(DefaultPDFMemory, 4*maxSize), MaxText: max(DefaultPDFText, 2*maxSize), OCR: opt.OCR,
		Interruptible: opt.Untrusted,
		budgetHint:    "raise the file size limit (ingest.max_file_size, --max-file-size): the PDF engine gets four times it"}
	skip := opt.SkipFolders
	if skip == nil {
		skip = DefaultSkipFolders()
	}
	skipDirs := make(map[string]bool, len(skip))
	for _, n := range skip {
		skipDirs[n] = true
	}
	l := &Loader{maxSize: opt.MaxFileSize, gitignore: !opt.NoGitignore, keepData: opt.KeepData, skipDirs: skipDirs, pdf: pdf, readers: map[Kind]Reader{
		KindText:     TextReader{},
		KindMarkdown: TextReader{},
		KindCode:     TextReader{},
		KindJSON:     ObjectReader{},
		KindJSONL:    ObjectReader{Lines: true},
		KindCSV:      CSVReader{PerFile: opt.CSVPerFile},
		KindHTML:     &HTMLReader{},
		KindPDF:      pdf,
		KindDOCX:     DOCXReader{},
		KindSVG:      SVGReader{},
	}}
	if l.maxSize <= 0 {
		l.maxSize = DefaultMaxFileSize
	}
	l.custom = map[Kind]bool{}
	for k, r := range opt.Readers {
		l.readers[k], l.custom[k] = r, true
	}
	return l
}

// ReadBytes reads data as the file name would be read (Sniff picks the
// reader), for content that is not on disk.
func (l *Loader) ReadBytes(ctx context.Context, name string, data []byte) ([]*document.Document, error) {
	docs, _, _, err := l.parse(ctx, File{Path: name, Data: data}, false)
	return docs, err
}

// parse reads f's bytes with the reader their kind calls for (Sniff),
// after converting text in a legacy encoding to UTF-8 and, when
// dataRules holds, skipping what is data rather than prose or code
// (dataReason). A reader's ErrPartial with documents is not an error: the
// documents are what could be read, and its message joins the note, which
// also says what reading changed (a conversion). kind is set once
// sniffed, even when an error follows.
func (l *Loader) parse(ctx context.Context, f File, dataRules bool) (docs []*document.Document, kind Kind, note string, err error) {
	if kind, err = Sniff(f.Path, f.Data); err != nil {
		return nil, "", "", err
	}
	r, ok := l.readers[kind]
	if !ok {
		return nil, kind, "", fmt.Errorf("%w: no reader for %s files in this build", ErrSkipped, kind)
	}
	if f.Data, note, err = asUTF8(kind, f.Data); err != nil {
		return nil, kind, "", err
	}
	if dataRules && !l.keepData && kind != KindPDF && kind != KindDOCX {
		if why := dataReason(filepath.ToSlash(f.Path), kind, f.Data); why != "" {
			return nil, kind, "", fmt.Errorf("%w: %s (ingest.keep_data reads it)", ErrSkipped, why)
		}
	}
	f.Kind = kind
	docs, err = r.Read(ctx, f)
	if errors.Is(err, ErrPartial) && len(docs) > 0 {
		return docs, kind, joinNotes(note, err.Error()), nil
	}
	return docs, kind, note, err
}

// joinNotes is the notes that are not empty, joined with "; ".
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}

// AddNote adds note to what the result says reading changed.
func (r *Result) AddNote(note string) { r.Note = joinNotes(r.Note, note) }

// KeepsData reports whether data files and chunks are kept
// (Options.KeepData).
func (l *Loader) KeepsData() bool { return l.keepData }

// OCR reports whether scanned PDF pages are read (Options.OCR).
func (l *Loader) OCR() bool { return l.pdf.OCR != nil }

// Close stops the PDF engine if a PDF started it. Readers given in
// Options.Readers are the caller's to close.
func (l *Loader) Close() error { return l.pdf.Close() }

// Result is the outcome of reading one file: its documents, or the reason
// it could not be read.
type Result struct {
	Path   string
	Source document.Source
	Kind   Kind
	// Hash is the hex SHA-256 of the file's bytes; ingestion skips a
	// source whose hash has not changed.
	Hash string
	Docs []*document.Document
	Err  error
	// Note says what reading changed that the user should know, such as
	// text converted from a legacy encoding; empty for most files.
	Note string
}

// FileError is a file that could not be read.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// ErrSkipped marks files that were deliberately not read (too large, an
// image, an unknown binary format): a notice, not a failure.
var ErrSkipped = errors.New("skipped")

// ErrPartial marks a file read in part: the documents a reader returns
// with it are what it could read, and its message names the rest (a PDF's
// pages that could not be read). The file is written, with the message as
// its note.
var ErrPartial = errors.New("read in part")

// ErrNoText marks files that were read but hold no text to index (empty,
// a scan without a text layer, encrypted), with the reason: a notice that
// says what would give them text, not a failure of the reader. Anything
// else a reader returns means the file could not be parsed.
var ErrNoText = errors.New("no text")

// DefaultSkipFolders are the folders a walk does not descend into below a
// root (SEMANTICS §6): dependencies and build output, by their names.
// Options.SkipFolders replaces them; each one left out is reported.
func DefaultSkipFolders() []string {
	return []string{"node_modules", "__pycache__", "venv", "build", "dist", "vendor"}
}

// Walk reads every file under the roots (files or directories) and calls fn
// with each result in a stable order: roots in order, then paths sorted. An
// error from fn stops the walk and is returned; per-file problems arrive as
// Result.Err. Two roots that give the same source name are an error naming
// both files.
func (l *Loader) Walk(ctx context.Context, roots []string, fn func(Result) error) error {
	files, err := l.Files(roots)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, _ := l.readFileIf(ctx, f.Path, f.Source, f.at, nil)
		if err := fn(res); err != nil {
			return err
		}
	}
	return nil
}

type listed struct {
	path string
	src  document.Source
	at   opener
}

// list returns the files under root that the walk reads, narrowed by the
// include and exclude rules of a Selection.
//
// A root that is a symbolic link is followed, to a file or a folder: the
// caller named it, so it is what they mean to read (a server confines its
// clients' paths to its roots on real paths before they get here). The
// link is resolved once, here; the walk and the reads go through its
// target, and links met during the walk keep the rules of any folder.
// Paths and source names stay those of the root as written.
//
// leftOut are the folders below root left out for their name
// (Options.SkipFolders), as paths under root as written.
func (l *Loader) list(root string, include, exclude []ignoreRule) (out []listed, leftOut []string, err error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", root, err)
	}
	st, err := os.Stat(realRoot)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", root, err)
	}
	if !st.IsDir() {
		name := filepath.ToSlash(filepath.Clean(root))
		return []listed{{path: root, src: document.Source{Type: SourceTypeOf(name), Name: name},
			at: opener{real: realRoot, listed: st}}}, nil, nil
	}
	// Files are opened through the root as it was when listed: a link
	// swapped in later, at any depth, cannot lead a read outside it.
	dir, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", root, err)
	}
	var rules []ignoreRule
	// The walk starts at the resolved folder: WalkDir does not descend
	// into a root that is itself a link.
	err = filepath.WalkDir(realRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == realRoot {
				return err
			}
			return nil // an unreadable entry below the root is skipped
		}
		osRel, _ := filepath.Rel(realRoot, p)
		rel := filepath.ToSlash(osRel)
		if rel == "." {
			if l.gitignore {
				rules = append(rules, l.readIgnore(p, "")...)
			}
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if strings.HasPrefix(name, ".") || (l.gitignore && ignored(rules, rel, true)) || ignored(exclude, rel, true) {
				return filepath.SkipDir
			}
			if l.skipDirs[name] {
				leftOut = append(leftOut, filepath.Join(root, osRel))
				return filepath.SkipDir
			}
			if l.gitignore {
				rules = append(rules, l.readIgnore(p, rel)...)
			}
			return nil
		}
		if strings.HasPrefix(name, ".") || (l.gitignore && ignored(rules, rel, false)) || ignored(exclude, rel, false) ||
			(len(include) > 0 && !ignored(include, rel, false)) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(p)
			if err != nil || !within(realRoot, target) {
				return nil // never follow a link out of the root
			}
			if st, err := os.Stat(target); err != nil || !st.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		out = append(out, listed{path: filepath.Join(root, osRel), src: document.Source{Type: SourceTypeOf(rel), Name: rel}, at: opener{root: dir, rel: osRel}})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("walk %s: %w", root, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].src.Name < out[j].src.Name })
	return out, leftOut, nil
}

func (l *Loader) readIgnore(dir, rel string) []ignoreRule {
	b, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil {
		return nil
	}
	return parseGitignore(rel, b)
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// ReadFile reads one file as source src.
func (l *Loader) ReadFile(ctx context.Context, p string, src document.Source) Result {
	return l.readFile(ctx, p, src)
}

func (l *Loader) readFile(ctx context.Context, p string, src document.Source) Result {
	res, _ := l.readFileIf(ctx, p, src, opener{}, nil)
	return res
}

// readFileIf reads a file's bytes and, unless skip says their hash is
// already known, parses them. It reports whether parsing was skipped.
func (l *Loader) readFileIf(ctx context.Context, p string, src document.Source, at opener, skip func(hash string) bool) (Result, bool) {
	res := Result{Path: p, Source: src}
	fail := func(err error) (Result, bool) {
		res.Err = &FileError{Path: p, Err: err}
		return res, false
	}
	data, err := at.read(p, l.maxSize)
	if err != nil {
		return fail(err)
	}
	res.Hash = document.ContentHash(string(data))
	if skip != nil && skip(res.Hash) {
		return res, true
	}
	// The hash stays the file's own bytes', whatever parse converts.
	docs, kind, note, err := l.parse(ctx, File{Path: p, Source: src, Data: data}, true)
	res.Kind, res.Note = kind, note
	if err != nil {
		return fail(err)
	}
	for _, d := range docs {
		// The built-in readers drop non-characters themselves; a reader
		// from Options.Readers is held to the same rule here.
		if l.custom[kind] {
			d.Content = document.StripNonCharacters(d.Content)
		}
		d.SourceType, d.SourceName = src.Type, src.Name
		if d.Provenance.Source == "" {
			d.Provenance.Source = src.Name
		}
	}
	res.Docs = docs
	return res, false
}

// SourceTypeOf is the source type of the file at p: "object" for JSON and
// JSON Lines, whose every object is a passage of its own (ObjectReader),
// else "file". The source is still the file: it is replaced, pruned and
// cited as the file p.
func SourceTypeOf(p string) string {
	switch byExt[strings.ToLower(path.Ext(filepath.ToSlash(p)))] {
	case KindJSON, KindJSONL:
		return document.SourceObject
	}
	return document.SourceFile
}

// FileBacked reports whether a stored source was read from a file: a file
// source, or the objects of a JSON file (a source of type "object" that
// ingestion recorded with the file it came from, its origin). Objects
// added through the API have no origin.
func FileBacked(src document.Source, origin string) bool {
	return src.Type == document.SourceFile || (src.Type == document.SourceObject && origin != "")
}

// byExt maps extensions to kinds; code extensions come from codeExts.
var byExt = map[string]Kind{
	".txt": KindText, ".text": KindText, ".rst": KindText, ".adoc": KindText, ".asciidoc": KindText,
	".org": KindText, ".log": KindText, ".tex": KindText,
	".md": KindMarkdown, ".markdown": KindMarkdown, ".mdown": KindMarkdown, ".mkd": KindMarkdown, ".mdx": KindMarkdown,
	".html": KindHTML, ".htm": KindHTML, ".xhtml": KindHTML,
	".pdf":  KindPDF,
	".docx": KindDOCX,
	".json": KindJSON, ".jsonl": KindJSONL, ".ndjson": KindJSONL,
	".csv": KindCSV, ".tsv": KindCSV,
	".svg": KindSVG,
}

var codeExts = []string{".go", ".py", ".pyi", ".rs", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx",
	".java", ".kt", ".kts", ".scala", ".groovy", ".swift", ".c", ".h", ".cc", ".cpp", ".cxx",
	".hpp", ".hh", ".hxx", ".m", ".mm", ".cs", ".fs", ".vb", ".rb", ".php", ".lua", ".dart",
	".ex", ".exs", ".erl", ".hs", ".ml", ".clj", ".jl", ".r", ".zig", ".nim", ".sh", ".bash",
	".zsh", ".ps1", ".pl", ".pm", ".sql", ".proto", ".vue", ".svelte", ".sol",
	".yaml", ".yml", ".toml", ".ini", ".cfg", ".xml", ".css", ".scss", ".mk", ".cmake", ".gradle", ".tf"}

// Sniff decides how to read a file: by its content when that is
// unambiguous (PDF, ZIP-based DOCX, HTML), else by extension. A binary file
// of no known format is skipped with ErrSkipped.
func Sniff(p string, data []byte) (Kind, error) {
	ext := strings.ToLower(path.Ext(filepath.ToSlash(p)))
	switch {
	case bytes.HasPrefix(data, []byte("%PDF-")),
		ext == ".pdf" && bytes.Contains(data[:min(len(data), 1024)], []byte("%PDF-")):
		// Readers (PDFium among them) take a header anywhere in the first
		// 1,024 bytes: mail and download tools leave junk before it.
		return KindPDF, nil
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		if ext == ".docx" || bytes.Contains(data[:min(len(data), 4096)], []byte("word/")) {
			return KindDOCX, nil
		}
		return "", fmt.Errorf("%w: a ZIP archive that is not a DOCX document", ErrSkipped)
	}
	if looksBinary(data) {
		if ext == ".pdf" {
			return "", fmt.Errorf("not a PDF: the file does not start with %%PDF-")
		}
		if ext == ".docx" {
			if bytes.HasPrefix(data, cfbMagic) {
				// Office keeps a password-protected document in an OLE
				// compound file holding an EncryptedPackage stream.
				return "", fmt.Errorf("docx: %w: encrypted (a password-protected Office file): save it without a password to ingest it", ErrNoText)
			}
			return "", fmt.Errorf("not a DOCX document: the file is not a ZIP archive")
		}
		return "", fmt.Errorf("%w: binary content of no supported format", ErrSkipped)
	}
	if looksSVG(data) {
		return KindSVG, nil
	}
	if k, ok := byExt[ext]; ok {
		if k == KindPDF || k == KindDOCX {
			return "", fmt.Errorf("not a %s document: its content is text", strings.ToUpper(string(k)))
		}
		return k, nil
	}
	for _, c := range codeExts {
		if ext == c {
			return KindCode, nil
		}
	}
	if looksHTML(data) {
		return KindHTML, nil
	}
	return KindText, nil
}

// looksSVG reports whether a file is an SVG image: an <svg> root, perhaps
// after an XML declaration, comments or a doctype.
func looksSVG(data []byte) bool {
	head := strings.ToLower(string(data[:min(len(data), 1024)]))
	i := strings.Index(head, "<svg")
	if i < 0 {
		return false
	}
	before := strings.TrimSpace(head[:i])
	return before == "" || strings.HasPrefix(before, "<?xml") || strings.HasPrefix(before, "<!--") || strings.HasPrefix(before, "<!doctype svg")
}

func looksHTML(data []byte) bool {
	head := strings.ToLower(strings.TrimSpace(string(data[:min(len(data), 512)])))
	return strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html")
}
