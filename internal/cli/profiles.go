package cli

import (
	"cmp"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
)

// profileFlag is --profile on the commands that search and ask.
func profileFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "profile", "", "search through this agent profile ([profiles.NAME] in config.toml; see quarry profiles): its collections and view narrow the search, its settings stand for the flags left out")
}

func newProfilesCmd(stdio IO) *cobra.Command {
	var (
		f      kbFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the agent profiles: named ways to search and ask",
		Long: `List the knowledge base's agent profiles. A profile is defined in config.toml as
[profiles.NAME]: the collections it searches, a filter (its view), the source types it
includes, and the mode, top_k, llm and post its requests get when they name none.
search, ask and chat take --profile NAME, the HTTP API and MCP a "profile" field, and a key
can be limited to profiles (quarry keys create --profile NAME).`,
		Example: `  quarry profiles
  quarry ask "How long do refunds take?" --profile support`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, false)
			if err != nil {
				return err
			}
			defer k.Close()
			ps := k.Profiles(quarry.Developer())
			if asJSON {
				out := make([]quarry.ProfileInfo, len(ps))
				for i, p := range ps {
					out[i] = p.Info()
				}
				return writeJSON(stdio, out)
			}
			if len(ps) == 0 {
				fmt.Fprintln(stdio.Err, "No profiles: define them in config.toml as [profiles.NAME] (quarry profiles --help).")
				return nil
			}
			tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PROFILE\tCOLLECTIONS\tSOURCES\tMODE\tTOP-K\tMODEL\tFILTER\tDESCRIPTION")
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, cmp.Or(strings.Join(p.Collections, ","), k.DefaultCollection()+" (default)"),
					cmp.Or(strings.Join(p.Sources, ","), "all"), cmp.Or(p.Mode, "default"), cmp.Or(itoa(p.TopK), "default"),
					cmp.Or(p.Model, "default"), cmp.Or(p.FilterText(), "none"), p.Description)
			}
			return tw.Flush()
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the profiles as JSON")
	return cmd
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}
