package cli

import (
	"bufio"
	"fmt"

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
			e, err := filter.ParseArg(args[0], schema)
			if err != nil {
				return usageErr(err)
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
			e, err := filter.ParseArg(args[0], schema)
			if err != nil {
				return usageErr(err)
			}
			m, err := filter.NewMatcher(e)
			if err != nil {
				return usageErr(err)
			}
			w := bufio.NewWriter(stdio.Out)
			if err := m.MatchJSONL(stdio.In, schema, func(id string) error { _, err := fmt.Fprintln(w, id); return err }); err != nil {
				return fmt.Errorf("stdin: %w", err)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&schemaPath, "schema", "", "collection schema (JSON) to validate the filter and documents against")
	return cmd
}

// loadSchema reads a schema file; an empty path means "no schema".
func loadSchema(path string) (*document.Schema, error) {
	if path == "" {
		return nil, nil
	}
	s, err := document.LoadSchema(path)
	return s, usageErr(err)
}

// parseFilterFlag parses a --filter ("" is none); the core checks it
// against the collection as it checks every request's filter.
func parseFilterFlag(src string) (filter.Expr, error) {
	if src == "" {
		return nil, nil
	}
	e, err := filter.ParseArg(src, nil)
	return e, cliErr(err)
}

// rawFilterFlag registers --allow-raw-filters on a command that takes a
// --filter.
func rawFilterFlag(cmd *cobra.Command, v *bool) {
	cmd.Flags().BoolVar(v, "allow-raw-filters", false, "accept raw store-tagged fragments in --filter (the store's own query language; default: refused)")
}
