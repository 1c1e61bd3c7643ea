package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/split"
)

func newChunkCmd(stdio IO) *cobra.Command {
	var (
		name        string
		asJSON      bool
		csvPerFile  bool
		ocr         bool
		maxFileSize int64
		settings    chunkFlags
	)
	cmd := &cobra.Command{
		Use:   "chunk PATH…",
		Short: "Show how files are cut into chunks",
		Long: `Show how files are cut into chunks, to tune chunking before ingesting.

PATH is a file or a directory. Files are read as ingestion reads them: text,
Markdown, code, HTML (main content), PDF (text per page), DOCX, JSON objects
and CSV rows. Directories are walked as ingestion walks them: .gitignore is
honoured, dot-folders, node_modules, __pycache__, venv, build, dist and vendor
are skipped, symbolic links never lead out of the directory, and files above
--max-file-size or of no readable format are skipped with a note. The
splitter "auto" (the default) uses markdown for Markdown, HTML and DOCX, code
for source code, and recursive for PDF pages and everything else.

A file that cannot be read or split is reported at the end; the other files
are still printed, and the exit status is 1.

Settings by splitter (unset means the default):
  delimiter  --max-length 1000 --separator " " --word-overlap 0 --min-length 0
  sentence   --max-words 200 --overlap-words 0 --min-words 0
  recursive, markdown
             --max-tokens 512 --overlap-tokens 64 (cl100k_base tokens; the default
             overlap is at most an eighth of --max-tokens; 0 turns it off)
  code       --max-lines 160
  auto       --max-tokens, --overlap-tokens, --max-lines

With --json each chunk is a line in Quarry's document JSON, which quarry filter match reads:
  {"id","content","sourceType","sourceName","metadata","embedding","score","provenance":{"source",
   "page","lineStart","lineEnd","headingPath","charStart","charEnd","chunkIndex","chunkCount"}}
(zero provenance fields are left out).`,
		Example: `  quarry chunk README.md
  quarry chunk --splitter sentence --max-words 120 --overlap-words 20 notes.txt
  quarry chunk --max-tokens 256 --overlap-tokens 32 --json docs/
  quarry chunk --csv-per-file --max-file-size 104857600 data/`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return flagError{fmt.Errorf("%s: give at least one file or directory", cmd.CommandPath())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxFileSize < 0 {
				return usageErr(fmt.Errorf("--max-file-size must be 0 (the default, %d bytes) or more, got %d", load.DefaultMaxFileSize, maxFileSize))
			}
			w := bufio.NewWriter(stdio.Out)
			p := &chunkPrinter{w: w, json: asJSON}
			req := quarry.PreviewRequest{Splitter: name, Settings: settings.settings(cmd.Flags()), MaxFileSize: maxFileSize, CSVPerFile: csvPerFile, OCR: ocrMode(ocr)}
			rep, err := quarry.Preview(cmd.Context(), args, req, p.chunk)
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			if err != nil {
				return cliErr(fmt.Errorf("chunk: %w", flagNamed(err)))
			}
			for _, m := range rep.Skipped {
				fmt.Fprintf(stdio.Err, "quarry: skipped %s\n", m)
			}
			for _, m := range append(rep.NoText, rep.Failed...) {
				fmt.Fprintf(stdio.Err, "quarry: %s\n", m)
			}
			if len(rep.Failed) > 0 {
				return fmt.Errorf("chunk: %d of %d files failed", len(rep.Failed), rep.Files)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "splitter", "auto", "splitter: "+strings.Join(split.Names(), ", "))
	f.BoolVar(&asJSON, "json", false, "print one JSON object per chunk")
	f.BoolVar(&ocr, "ocr", false, ocrUsage)
	f.BoolVar(&csvPerFile, "csv-per-file", false, "read a CSV file as one document instead of one per row")
	f.Int64Var(&maxFileSize, "max-file-size", 0, fmt.Sprintf("skip files larger than this many bytes (default %d)", load.DefaultMaxFileSize))
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

// chunkPrinter writes chunks as JSON lines or as text for people.
type chunkPrinter struct {
	w      io.Writer
	json   bool
	tokens split.Tokenizer
}

func (p *chunkPrinter) chunk(c *document.Document) error {
	pv := c.Provenance
	if p.json {
		b, err := c.MarshalJSON()
		if err != nil {
			return fmt.Errorf("chunk %s: %w", c.SourceName, err)
		}
		_, err = fmt.Fprintf(p.w, "%s\n", b)
		return err
	}
	n, err := p.tokens.Count(c.Content)
	if err != nil {
		return err
	}
	// The place reads as every surface cites it (document.Locate).
	header := fmt.Sprintf("--- %s | chunk %d/%d", document.Locate(c.SourceName, pv), pv.ChunkIndex+1, pv.ChunkCount)
	_, err = fmt.Fprintf(p.w, "%s | %d tokens, %d chars\n%s\n\n", header, n, utf8.RuneCountInString(c.Content), c.Content)
	return err
}
