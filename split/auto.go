package split

import (
	"path"
	"strings"

	"github.com/quarry-rag/quarry/document"
)

// Kind is what a file is, as far as choosing a splitter goes.
type Kind int

// Kinds of files, told apart by extension.
const (
	KindOther    Kind = iota // an extension Quarry does not know
	KindText                 // plain text: .txt, .text, .rst, .adoc, .org
	KindMarkdown             // .md, .markdown, .mdx and kin
	KindCode                 // source code: .go, .py, .rs, .js, .ts, .java, …
)

// String returns "text", "markdown", "code" or "other".
func (k Kind) String() string {
	switch k {
	case KindText:
		return "text"
	case KindMarkdown:
		return "markdown"
	case KindCode:
		return "code"
	}
	return "other"
}

// KindOf returns the kind of the file at p by its extension (case-insensitive;
// p may use / or the OS separator).
func KindOf(p string) Kind {
	switch strings.ToLower(path.Ext(strings.ReplaceAll(p, `\`, "/"))) {
	case ".txt", ".text", ".rst", ".adoc", ".asciidoc", ".org":
		return KindText
	case ".md", ".markdown", ".mdown", ".mkd", ".mkdn", ".mdx":
		return KindMarkdown
	case ".go", ".py", ".pyi", ".rs", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx",
		".java", ".kt", ".kts", ".scala", ".groovy", ".swift", ".c", ".h", ".cc", ".cpp", ".cxx",
		".hpp", ".hh", ".hxx", ".m", ".mm", ".cs", ".fs", ".vb", ".rb", ".php", ".lua", ".dart",
		".ex", ".exs", ".erl", ".hs", ".ml", ".clj", ".jl", ".r", ".zig", ".nim", ".sh", ".bash",
		".zsh", ".ps1", ".pl", ".pm", ".sql", ".proto", ".vue", ".svelte", ".sol":
		return KindCode
	}
	return KindOther
}

// AutoConfig configures the automatic choice of splitter.
type AutoConfig struct {
	// Budget is the token budget of the Markdown and recursive splitters;
	// they share one tokenizer.
	Budget RecursiveConfig
	// Code configures the code splitter.
	Code CodeConfig
}

// Auto splits each document with the splitter its kind calls for
// (SEMANTICS §3): Markdown with Markdown, code with Code, everything else
// with Recursive. The kind comes from the extension of
// doc.Provenance.Source, or of doc.SourceName when that is empty. Create it
// with NewAuto.
type Auto struct {
	markdown  *Markdown
	code      *Code
	recursive *Recursive
}

// NewAuto validates cfg and returns an automatic splitter. Errors are
// *ConfigError.
func NewAuto(cfg AutoConfig) (*Auto, error) {
	budget := cfg.Budget
	if budget.Tokenizer == nil {
		budget.Tokenizer = new(Tokenizer)
	}
	rec, err := newRecursive("auto", budget)
	if err != nil {
		return nil, err
	}
	codeCfg := cfg.Code
	if codeCfg.MaxTokens == 0 {
		codeCfg.MaxTokens = rec.maxTokens
	}
	if codeCfg.Tokenizer == nil {
		codeCfg.Tokenizer = budget.Tokenizer
	}
	code, err := NewCode(codeCfg)
	if err != nil {
		return nil, err
	}
	return &Auto{markdown: &Markdown{rec: rec}, code: code, recursive: rec}, nil
}

// For returns the splitter Auto uses for a file at p.
func (a *Auto) For(p string) Splitter { return a.ForKind(KindOf(p)) }

// ForKind returns the splitter for text of kind k.
func (a *Auto) ForKind(k Kind) Splitter {
	switch k {
	case KindMarkdown:
		return a.markdown
	case KindCode:
		return a.code
	}
	return a.recursive
}

// Split implements Splitter.
func (a *Auto) Split(doc *document.Document) ([]*document.Document, error) {
	return a.For(docPath(doc)).Split(doc)
}
