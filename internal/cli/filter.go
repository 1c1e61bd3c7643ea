package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
)

func newFilterCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "filter",
		Short: "Check filters and try them on documents",
		Long: `Check filters and try them on documents.

FILTER may be written in any of three syntaxes:
  text        tenant = 'acme' and (year >= 2025 or tags contains any ('go','rag'))
  short JSON  {"tenant":"acme","$or":[{"year":{"$gte":2025}},{"tags":{"$containsAny":["go","rag"]}}]}
  canonical   {"operator":"eq","field":"tenant","value":"acme"}
Input starting with "{" is read as JSON.`,
	}
	cmd.AddCommand(newFilterCheckCmd(stdio), newFilterMatchCmd(stdio))
	return cmd
}

func newFilterCheckCmd(stdio IO) *cobra.Command {
	var schemaPath string
	cmd := &cobra.Command{
		Use:   "check [--schema schema.json] FILTER",
		Short: "Validate a filter and print its canonical JSON",
		Example: `  quarry filter check "year >= 2025 and lang in ('en','de')"
  quarry filter check --schema schema.json '{"tenant":"acme"}'`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			schema, err := loadSchema(schemaPath)
			if err != nil {
				return err
			}
			e, err := parseFilterArg(args[0], schema)
			if err != nil {
				return err
			}
			out, err := filter.Format(e)
			if err != nil {
				return usageErr(err)
			}
			_, err = fmt.Fprintln(stdio.Out, out)
			return err
		},
	}
	cmd.Flags().StringVar(&schemaPath, "schema", "", "collection schema (JSON) to validate the filter against")
	return cmd
}

func newFilterMatchCmd(stdio IO) *cobra.Command {
	var schemaPath string
	cmd := &cobra.Command{
		Use:   "match [--schema schema.json] FILTER < docs.jsonl",
		Short: "Print the ids of the JSONL documents on standard input that match a filter",
		Long: `Print the ids of the documents on standard input that match FILTER, one per line.

Each input line is a JSON document: {"id","content","sourceType","sourceName","metadata"}.
With --schema the filter is validated against the schema and every document too;
without it the filter is checked for structure only. Evaluation follows the same
rules as every Quarry store: a missing field matches nothing, neq included.`,
		Example: `  printf '%s\n' '{"id":"a","metadata":{"year":2026}}' | quarry filter match "year >= 2025"`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			schema, err := loadSchema(schemaPath)
			if err != nil {
				return err
			}
			e, err := parseFilterArg(args[0], schema)
			if err != nil {
				return err
			}
			m, err := filter.NewMatcher(e)
			if err != nil {
				return usageErr(err)
			}
			return matchDocuments(stdio.In, stdio.Out, m, schema)
		},
	}
	cmd.Flags().StringVar(&schemaPath, "schema", "", "collection schema (JSON) to validate the filter and documents against")
	return cmd
}

func matchDocuments(in io.Reader, out io.Writer, m *filter.Matcher, schema *document.Schema) error {
	r := bufio.NewReaderSize(in, 1<<16)
	w := bufio.NewWriter(out)
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var d document.Document
			if uerr := d.UnmarshalJSON(b); uerr != nil {
				return fmt.Errorf("stdin line %d: %w", line, uerr)
			}
			if d.ID == "" {
				return fmt.Errorf("stdin line %d: document has no \"id\"", line)
			}
			if verr := schema.ValidateDocument(&d); verr != nil {
				return fmt.Errorf("stdin line %d: %w", line, verr)
			}
			if m.MatchDocument(&d) {
				if _, werr := fmt.Fprintln(w, d.ID); werr != nil {
					return werr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
	}
	return w.Flush()
}

// loadSchema reads a schema file; an empty path means "no schema".
func loadSchema(path string) (*document.Schema, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr(fmt.Errorf("read schema: %w", err))
	}
	s, err := document.ParseSchema(b)
	if err != nil {
		return nil, usageErr(fmt.Errorf("schema %s: %w", path, err))
	}
	return s, nil
}

// parseFilterArg parses a filter in any syntax and validates it against the
// schema when there is one; an error shows where the input went wrong.
func parseFilterArg(src string, schema *document.Schema) (filter.Expr, error) {
	e, err := filter.Parse(src)
	if err != nil {
		return nil, usageErr(withCaret(src, err))
	}
	if e == nil {
		return nil, usageErr(errors.New("the filter is empty"))
	}
	if schema != nil {
		if err := filter.Validate(e, schema); err != nil {
			return nil, usageErr(err)
		}
	}
	return e, nil
}

// parseFilterFlag parses a --filter ("" is none); the core checks it
// against the collection as it checks every request's filter.
func parseFilterFlag(src string) (filter.Expr, error) {
	if src == "" {
		return nil, nil
	}
	return parseFilterArg(src, nil)
}

// withCaret appends the input and a caret under the offending column.
func withCaret(src string, err error) error {
	var se *filter.SyntaxError
	if !errors.As(err, &se) || se.Column == 0 || strings.ContainsAny(src, "\n\t") {
		return err
	}
	return fmt.Errorf("%w\n  %s\n  %s^", err, src, strings.Repeat(" ", se.Column-1))
}

// rawFilterFlag registers --allow-raw-filters on a command that takes a
// --filter.
func rawFilterFlag(cmd *cobra.Command, v *bool) {
	cmd.Flags().BoolVar(v, "allow-raw-filters", false, "accept raw store-tagged fragments in --filter (the store's own query language; default: refused)")
}
