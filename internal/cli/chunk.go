package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/split"
)

func newChunkCmd(stdio IO) *cobra.Command {
	var (
		name     string
		asJSON   bool
		settings chunkFlags
	)
	cmd := &cobra.Command{
		Use:   "chunk PATH…",
		Short: "Show how files are cut into chunks",
		Long: `Show how files are cut into chunks, to tune chunking before ingesting.

PATH is a file or a directory; directories are walked for text, Markdown and
code files, skipping dot-folders, node_modules, __pycache__, venv, build, dist
and vendor. The splitter "auto" (the default) uses markdown for Markdown, code
for source code and recursive for everything else.

Settings by splitter (unset means the default):
  delimiter  --max-length 1000 --separator " " --word-overlap 0 --min-length 0
  sentence   --max-words 200 --overlap-words 0 --min-words 0
  recursive, markdown
             --max-tokens 512 --overlap-tokens 64 (cl100k_base tokens; the default
             overlap is at most an eighth of --max-tokens; 0 turns it off)
  code       --max-lines 160
  auto       --max-tokens, --overlap-tokens, --max-lines

With --json each chunk is a line:
  {"id","content","sourceType","sourceName","metadata","provenance":{"source","page",
   "lineStart","lineEnd","headings","charStart","charEnd","chunkIndex","chunkCount"}}`,
		Example: `  quarry chunk README.md
  quarry chunk --splitter sentence --max-words 120 --overlap-words 20 notes.txt
  quarry chunk --max-tokens 256 --overlap-tokens 32 --json docs/`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return flagError{fmt.Errorf("%s: give at least one file or directory", cmd.CommandPath())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := split.New(name, settings.settings(cmd.Flags()))
			if err != nil {
				return usageErr(flagNamed(err))
			}
			files, err := chunkInputs(args)
			if err != nil {
				return err
			}
			w := bufio.NewWriter(stdio.Out)
			p := &chunkPrinter{w: w, json: asJSON}
			failed := 0
			for _, f := range files {
				if err := p.file(s, f); err != nil {
					if werr := w.Flush(); werr != nil {
						return werr
					}
					fmt.Fprintf(stdio.Err, "quarry: %v\n", err)
					failed++
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("chunk: %d of %d files failed", failed, len(files))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "splitter", "auto", "splitter: "+strings.Join(split.Names(), ", "))
	f.BoolVar(&asJSON, "json", false, "print one JSON object per chunk")
	settings.register(f)
	return cmd
}

// chunkFlags holds the splitter settings; only flags set on the command
// line reach split.Settings, so an explicit 0 is checked, not defaulted.
type chunkFlags struct {
	maxLength, wordOverlap, minLength  int
	maxWords, overlapWords, minWords   int
	maxTokens, overlapTokens, maxLines int
	separator                          string
}

func (c *chunkFlags) register(f *pflag.FlagSet) {
	f.IntVar(&c.maxLength, "max-length", 0, "delimiter: longest chunk in characters (default 1000)")
	f.StringVar(&c.separator, "separator", "", `delimiter: word separator (default " ")`)
	f.IntVar(&c.wordOverlap, "word-overlap", 0, "delimiter: words a chunk repeats from the previous one")
	f.IntVar(&c.minLength, "min-length", 0, "delimiter: shorter chunks join the previous one")
	f.IntVar(&c.maxWords, "max-words", 0, "sentence: most words in a chunk (default 200)")
	f.IntVar(&c.overlapWords, "overlap-words", 0, "sentence: words a chunk repeats from the previous one")
	f.IntVar(&c.minWords, "min-words", 0, "sentence: chunks with fewer words join the previous one")
	f.IntVar(&c.maxTokens, "max-tokens", 0, "recursive, markdown, auto: token budget of a chunk (default 512)")
	f.IntVar(&c.overlapTokens, "overlap-tokens", 0, "recursive, markdown, auto: tokens of overlap (default 64, at most max-tokens/8; 0 for none)")
	f.IntVar(&c.maxLines, "max-lines", 0, "code, auto: most lines in a code chunk (default 160)")
}

func (c *chunkFlags) settings(f *pflag.FlagSet) split.Settings {
	var s split.Settings
	for _, p := range []struct {
		flag string
		dst  **int
		v    *int
	}{
		{"max-length", &s.MaxLength, &c.maxLength}, {"word-overlap", &s.WordOverlap, &c.wordOverlap},
		{"min-length", &s.MinLength, &c.minLength}, {"max-words", &s.MaxWords, &c.maxWords},
		{"overlap-words", &s.OverlapWords, &c.overlapWords}, {"min-words", &s.MinWords, &c.minWords},
		{"max-tokens", &s.MaxTokens, &c.maxTokens}, {"overlap-tokens", &s.OverlapTokens, &c.overlapTokens},
		{"max-lines", &s.MaxLines, &c.maxLines},
	} {
		if f.Changed(p.flag) {
			*p.dst = p.v
		}
	}
	if f.Changed("separator") {
		s.Separator = &c.separator
	}
	return s
}

// flagNamed prefixes a splitter configuration error with the flag that sets
// the offending setting (maxLength → --max-length).
func flagNamed(err error) error {
	var ce *split.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	var b strings.Builder
	b.WriteString("--")
	for _, r := range ce.Param {
		if unicode.IsUpper(r) {
			b.WriteByte('-')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return fmt.Errorf("%s: %w", b.String(), err)
}

// chunkInput is a file to chunk and the source name its chunks carry, or
// the error met reaching it while walking a directory.
type chunkInput struct {
	path, name string
	err        error
}

// skipDir reports whether a folder below a root is never walked into
// (SEMANTICS §6).
func skipDir(name string) bool {
	switch name {
	case "node_modules", "__pycache__", "venv", "build", "dist", "vendor":
		return true
	}
	return strings.HasPrefix(name, ".")
}

// chunkInputs expands the arguments: a file is named as given, a file found
// under a directory by its path relative to that directory.
func chunkInputs(args []string) ([]chunkInput, error) {
	var out []chunkInput
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			return nil, fmt.Errorf("chunk: %w", err)
		}
		if !info.IsDir() {
			out = append(out, chunkInput{path: arg, name: filepath.ToSlash(filepath.Clean(arg))})
			continue
		}
		err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == arg {
					return err
				}
				// An unreadable entry is reported with the files; the walk goes on.
				out = append(out, chunkInput{path: p, err: err})
				return nil
			}
			if d.IsDir() {
				if p != arg && skipDir(d.Name()) {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() || split.KindOf(p) == split.KindOther {
				return nil
			}
			src, err := document.FileSource(arg, p)
			if err != nil {
				return err
			}
			out = append(out, chunkInput{path: p, name: src.Name})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("chunk: walk %s: %w", arg, err)
		}
	}
	return out, nil
}

// chunkPrinter writes chunks as JSON lines or as text for people.
type chunkPrinter struct {
	w      io.Writer
	json   bool
	tokens split.Tokenizer
}

func (p *chunkPrinter) file(s split.Splitter, in chunkInput) error {
	if in.err != nil {
		return fmt.Errorf("chunk: %w", in.err)
	}
	b, err := os.ReadFile(in.path)
	if err != nil {
		return fmt.Errorf("chunk: %w", err)
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return fmt.Errorf("chunk %s: not a UTF-8 text file", in.path)
	}
	doc := document.New(string(b))
	doc.SourceType = document.SourceFile
	doc.SourceName = in.name
	doc.Provenance.Source = filepath.ToSlash(in.path)
	chunks, err := s.Split(doc)
	if err != nil {
		return fmt.Errorf("chunk %s: %w", in.path, err)
	}
	for _, c := range chunks {
		if err := p.chunk(c); err != nil {
			return err
		}
	}
	return nil
}

// chunkJSON is the wire shape of a chunk printed by quarry chunk --json.
type chunkJSON struct {
	ID         string         `json:"id"`
	Content    string         `json:"content"`
	SourceType string         `json:"sourceType"`
	SourceName string         `json:"sourceName"`
	Metadata   map[string]any `json:"metadata"`
	Provenance provenanceJSON `json:"provenance"`
}

type provenanceJSON struct {
	Source     string   `json:"source"`
	Page       int      `json:"page"`
	LineStart  int      `json:"lineStart"`
	LineEnd    int      `json:"lineEnd"`
	Headings   []string `json:"headings"`
	CharStart  int      `json:"charStart"`
	CharEnd    int      `json:"charEnd"`
	ChunkIndex int      `json:"chunkIndex"`
	ChunkCount int      `json:"chunkCount"`
}

func (p *chunkPrinter) chunk(c *document.Document) error {
	pv := c.Provenance
	if p.json {
		out := chunkJSON{
			ID: c.ID, Content: c.Content, SourceType: c.SourceType, SourceName: c.SourceName, Metadata: c.Metadata,
			Provenance: provenanceJSON{
				Source: pv.Source, Page: pv.Page, LineStart: pv.LineStart, LineEnd: pv.LineEnd,
				Headings: pv.HeadingPath, CharStart: pv.CharStart, CharEnd: pv.CharEnd,
				ChunkIndex: pv.ChunkIndex, ChunkCount: pv.ChunkCount,
			},
		}
		if out.Metadata == nil {
			out.Metadata = map[string]any{}
		}
		if out.Provenance.Headings == nil {
			out.Provenance.Headings = []string{}
		}
		enc := json.NewEncoder(p.w)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("chunk %s: %w", c.SourceName, err)
		}
		return nil
	}
	n, err := p.tokens.Count(c.Content)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("--- %s | chunk %d/%d | lines %d-%d", c.SourceName, pv.ChunkIndex+1, pv.ChunkCount, pv.LineStart, pv.LineEnd)
	if len(pv.HeadingPath) > 0 {
		header += " | " + strings.Join(pv.HeadingPath, " > ")
	}
	_, err = fmt.Fprintf(p.w, "%s | %d tokens, %d chars\n%s\n\n", header, n, utf8.RuneCountInString(c.Content), c.Content)
	return err
}
