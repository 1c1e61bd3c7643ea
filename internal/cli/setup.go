package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/store"
)

func newSetupCmd(stdio IO) *cobra.Command {
	var url, runtimeRole string
	cmd := &cobra.Command{
		Use:   "setup --store URL",
		Short: "Create a server store's extension, tables and indexes (run once, as an owner role)",
		Long: `Create what Quarry needs in a server store — for PostgreSQL the vector extension,
the quarry_* tables and their indexes — with a role that may create them. Afterwards
Quarry runs with a role that has only SELECT, INSERT, UPDATE and DELETE on the tables
(creating a new collection builds an index, so that stays with the owner). Running it
again is harmless.

Setup also creates the least-privileged role raw filter fragments run as (PostgreSQL's
quarry_fragment, MariaDB's per-database fragment account), which needs a user that may
create roles. With --runtime-role it prints the statements that let a separate run-time
role run Quarry, for a DBA to review and run; quarry doctor warns when the store's role
holds more than that.`,
		Example: `  quarry setup --store postgres://owner@db/quarry
  quarry setup --store postgres://owner@db/quarry --runtime-role quarry_app`,
		Args: exactArgs(0),
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
			if runtimeRole == "" {
				return nil
			}
			pa, ok := s.PrivilegeAuditor()
			if !ok {
				return usageErr(errors.New("setup: --runtime-role: this store has no roles to grant"))
			}
			grants, err := pa.RuntimeGrants(cmd.Context(), runtimeRole)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdio.Out, "-- run as the store's owner, so "+runtimeRole+" can run Quarry:")
			for _, g := range grants {
				fmt.Fprintln(stdio.Out, g)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "store", "", "store URL (postgres://…)")
	cmd.Flags().StringVar(&runtimeRole, "runtime-role", "", "print the grants a separate run-time role needs")
	return cmd
}
