package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
)

func newObjectsCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "objects",
		Short: "Add, replace and delete JSON objects, one passage each",
		Long: `JSON objects as passages of source type object: each object's fields become "key: value"
lines, its id, title and @self fields metadata. An object is named by its id (or @self.id):
putting one with a stored id replaces it. Filter them with sourceType = 'object'.`,
	}
	var f kbFlags
	put := &cobra.Command{
		Use:     "put FILE.json",
		Short:   "Add or replace the objects of a JSON file (an object or an array; - for standard input)",
		Example: `  echo '{"id":"p-1","title":"Kettle","price":25}' | quarry objects put -`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readArg(stdio, args[0], quarry.MaxObjectsBytes)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, true)
			if err != nil {
				return err
			}
			defer k.Close()
			res, err := k.PutObjects(ctx, quarry.Developer(), "", data)
			if err != nil {
				return cliErr(err)
			}
			_, err = fmt.Fprintf(stdio.Out, "%d objects stored in %q\n", len(res.Objects), res.Collection)
			return err
		},
	}
	del := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete an object's passages",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			k, err := openKB(ctx, &f, false)
			if err != nil {
				return err
			}
			defer k.Close()
			n, err := k.DeleteObject(ctx, quarry.Developer(), "", args[0])
			if err != nil {
				return cliErr(err)
			}
			if n == 0 {
				return fmt.Errorf("no object %q in %q", args[0], k.DefaultCollection())
			}
			_, err = fmt.Fprintf(stdio.Out, "deleted object %q (%d passages)\n", args[0], n)
			return err
		},
	}
	f.register(put)
	f.register(del)
	cmd.AddCommand(put, del)
	return cmd
}
