package cli

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
)

func newImportCmd(stdio IO) *cobra.Command {
	var (
		f      kbFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "import FILE.yaml",
		Short: "Import knowledge nodes and their chunks from a YAML file",
		Long: `Import a knowledge hierarchy and its chunks from YAML (- for standard input):

  collection: handbook          # optional: the default collection
  nodes:
    - name: Billing
      type: fundamental         # optional: fundamental (under the root) or specialization (deeper)
      triggers: [invoice, refund]
      tags: [finance]           # added to every chunk's metadata as "tags"
      chunks:
        - text: Refunds are paid within fourteen days.
          source: billing/refunds   # optional
          metadata: {team: billing}
    - name: Gift cards
      parent: Billing           # a path (/Root/Billing) or a unique name; optional: the root
      chunks:
        - text: Gift cards cannot be refunded.

The file may also be JSON, for files a program writes. Nodes are found or made under their
parent, their triggers merged in; chunks are embedded, stored and placed under their node.
Importing the same file again changes nothing, and finishes an import that was cut off
(interrupted, or its process killed): chunks already stored are not embedded again.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readArg(stdio, args[0], quarry.MaxImportBytes)
			if err != nil {
				return err
			}
			imp, err := quarry.ParseImport(bytes.NewReader(data))
			if err != nil {
				return cliErr(err)
			}
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, true)
			if err != nil {
				return err
			}
			defer k.Close()
			rep, err := k.Import(ctx, quarry.Developer(), "", imp)
			if err != nil {
				return cliErr(err)
			}
			if asJSON {
				return writeJSON(stdio, rep)
			}
			_, err = fmt.Fprintf(stdio.Out, "%q: %d nodes (%d new), %d chunks placed (%d embedded and written)\n", rep.Collection, rep.Nodes, rep.Created, rep.Chunks, rep.Written)
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"collection","nodes","created","chunks","written"} as JSON`)
	return cmd
}
