package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/store"
)

func newSetupCmd(stdio IO) *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "setup --store URL",
		Short: "Create a server store's extension, tables and indexes (run once, as an owner role)",
		Long: `Create what Quarry needs in a server store — for PostgreSQL the vector extension,
the quarry_* tables and their indexes — with a role that may create them. Afterwards
Quarry runs with a role that has only SELECT, INSERT, UPDATE and DELETE on the tables
(creating a new collection builds an index, so that stays with the owner). Running it
again is harmless.`,
		Example: `  quarry setup --store postgres://owner@db/quarry`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if url == "" {
				return usageErr(errors.New("setup: --store URL is required"))
			}
			s, err := store.Open(cmd.Context(), url)
			if err != nil {
				return err
			}
			defer s.Close()
			if _, err := s.Setup(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintln(stdio.Out, "store ready")
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "store", "", "store URL (postgres://…)")
	return cmd
}
