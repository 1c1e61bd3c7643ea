package cli

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
)

func newDoctorCmd(stdio IO) *cobra.Command {
	var (
		f      kbFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the installation and the knowledge base, offline",
		Long: `Check, without the network and without downloading anything, what Quarry needs here: the
embedder's route (a probe is embedded when the embedder is offline), keyword search on a
built-in sample, the PDF engine and its cache, OCR, the store and its engine's version, and
the default collection's model and health. Without a knowledge base here the checks run on
an empty one in memory. Exit status 1 when a check fails.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := quarry.RunDoctor(cmd.Context(), f.kb, quarry.WithStore(f.store), quarry.WithCollection(f.collection))
			if err != nil {
				return cliErr(err)
			}
			if asJSON {
				err = writeJSON(stdio, d)
			} else {
				tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
				for _, c := range d.Checks {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", c.State, c.Name, c.Detail)
				}
				err = tw.Flush()
			}
			if err == nil && !d.OK {
				err = errors.New("a check failed (see above)")
			}
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"ok","checks":[{"name","state","detail","ms"}]} as JSON`)
	return cmd
}
