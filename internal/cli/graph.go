package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/retrieve/neo4j"
)

func newGraphCmd(stdio IO) *cobra.Command {
	var (
		f      kbFlags
		asJSON bool
		args   []string
	)
	cmd := &cobra.Command{
		Use:   "graph templates|schema|plugins|run TEMPLATE",
		Short: "The knowledge graph: its Cypher templates, schema and plugins; run a template",
		Long: `The Neo4j knowledge graph set in config.toml's [graph] section (docs/agent.md): list its
named Cypher templates, show its labels and relationship types, check for the APOC and GDS
plugins, or run a template with --arg NAME=VALUE (values only; a value that parses as JSON is
taken as JSON, else as a string). Its rows print as passages.`,
		Example: `  quarry graph templates
  quarry graph run related_products --arg name=Kettle --arg limit=3`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, pos []string) error {
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, false)
			if err != nil {
				return err
			}
			defer k.Close()
			sc := quarry.Developer()
			var out any
			switch pos[0] {
			case "templates":
				out, err = k.GraphTemplates(sc)
			case "schema":
				out, err = k.GraphSchema(ctx, sc)
			case "plugins":
				out, err = k.GraphPlugins(ctx, sc)
			case "run":
				if len(pos) != 2 {
					return usageErr(fmt.Errorf("graph run: name the template"))
				}
				a := map[string]any{}
				for _, kv := range args {
					name, val, ok := strings.Cut(kv, "=")
					if !ok {
						return usageErr(fmt.Errorf("--arg %q: give NAME=VALUE", kv))
					}
					var v any
					if json.Unmarshal([]byte(val), &v) != nil {
						v = val
					}
					a[name] = v
				}
				var ps []quarry.Passage
				if ps, err = k.RunGraphTemplate(ctx, sc, pos[1], a); err == nil && !asJSON {
					for _, p := range ps {
						fmt.Fprintf(stdio.Out, "[%d] %s\n%s\n\n", p.Rank, p.Location, p.Text)
					}
					if len(ps) == 0 {
						fmt.Fprintln(stdio.Out, "No rows.")
					}
					return nil
				}
				out = ps
			default:
				return usageErr(fmt.Errorf("graph %s: use templates, schema, plugins or run", pos[0]))
			}
			if err != nil {
				return cliErr(err)
			}
			if !asJSON && pos[0] == "templates" {
				for _, t := range out.([]neo4j.Template) {
					io.WriteString(stdio.Out, t.Describe())
				}
				return nil
			}
			return writeJSON(stdio, out)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringArrayVar(&args, "arg", nil, "with run: a template parameter as NAME=VALUE (repeat)")
	return cmd
}
