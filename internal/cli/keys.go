package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/keys"
)

func newKeysCmd(stdio IO) *cobra.Command {
	var kbDir string
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke the HTTP API's keys",
		Long: `API keys for quarry serve. A key has a permission (read, write or admin), the
collections it reaches (all by default) and optionally a filter merged by AND into every
search, answer and delete it makes. Keys are stored hashed in the knowledge base's
keys.json; a running server sees changes within a second.`,
	}
	var asJSON bool
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print results as JSON")
	cmd.PersistentFlags().StringVar(&kbDir, "kb", "", "knowledge base directory (default: ./.quarry, found upward; or $QUARRY_KB)")
	open := func() (*keys.File, error) { return quarry.OpenKeys(kbDir) }
	var (
		name, perm, flt string
		colls, profiles []string
		rate            float64
		allowRaw        bool
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a key and print it (once: only its hash is kept)",
		Example: `  quarry keys create --name acme-reader --permission read --filter "tenant = 'acme'"
  quarry keys create --name ops --permission admin`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			kf, err := open()
			if err != nil {
				return err
			}
			p, err := keys.ParsePermission(perm)
			if err != nil {
				return usageErr(err)
			}
			if err := quarry.CheckProfileNames(kbDir, profiles); err != nil {
				return cliErr(err)
			}
			k, token, err := kf.Create(keys.Spec{Name: name, Permission: p, Collections: colls, Profiles: profiles, Filter: flt, RateLimit: rate, AllowRawFilters: allowRaw})
			if err != nil {
				return usageErr(err)
			}
			if asJSON {
				return writeJSON(stdio, map[string]any{"id": k.ID, "name": k.Name, "permission": k.Permission, "token": token})
			}
			fmt.Fprintf(stdio.Err, "Created key %s (%s). It is shown once; store it now:\n", k.ID, k.Permission)
			fmt.Fprintln(stdio.Out, token)
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "a name to recognise the key by")
	create.Flags().StringVar(&perm, "permission", "read", "read, write or admin")
	create.Flags().StringArrayVar(&colls, "collection", nil, "collection the key reaches (repeatable; default: all)")
	create.Flags().StringArrayVar(&profiles, "profile", nil, "limit the key to this agent profile: it searches and asks only through it (repeatable; see quarry profiles)")
	create.Flags().StringVar(&flt, "filter", "", "filter every request is held to, in any syntax, e.g. \"tenant = 'acme'\"")
	create.Flags().Float64Var(&rate, "rate-limit", 0, "requests per second (default: the server's)")
	create.Flags().BoolVar(&allowRaw, "allow-raw-filters", false, "let this key's filters carry raw store-tagged fragments (the store's own query language; still held to --filter)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List keys (never their secrets)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			kf, err := open()
			if err != nil {
				return err
			}
			keys, err := kf.List()
			if err != nil {
				return err
			}
			if asJSON {
				for i := range keys {
					keys[i].Hash = "" // a key's hash is the file's, not for output
				}
				return writeJSON(stdio, keys)
			}
			if len(keys) == 0 {
				fmt.Fprintln(stdio.Err, "No keys: quarry serve listens on loopback only.")
				return nil
			}
			tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tPERMISSION\tCOLLECTIONS\tPROFILES\tFILTER\tCREATED\tSTATE")
			for _, k := range keys {
				state := "active"
				if !k.Revoked.IsZero() {
					state = "revoked " + k.Revoked.Format("2006-01-02")
				}
				cs := strings.Join(k.Collections, ",")
				if cs == "" {
					cs = "all"
				}
				ps := strings.Join(k.Profiles, ",")
				if ps == "" {
					ps = "any"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Permission, cs, ps, k.Filter, k.Created.Format("2006-01-02"), state)
			}
			return tw.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a key; a running server refuses it within a second",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kf, err := open()
			if err != nil {
				return err
			}
			if err := kf.Revoke(args[0]); err != nil {
				return usageErr(err)
			}
			if asJSON {
				return writeJSON(stdio, map[string]any{"id": args[0], "revoked": true})
			}
			fmt.Fprintf(stdio.Err, "Revoked key %s.\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}
