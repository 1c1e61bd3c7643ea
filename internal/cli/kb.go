package cli

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/filter"
)

// kbFlags are the flags every knowledge-base command shares.
type kbFlags struct {
	kb         string
	collection string
	store      string
}

func (f *kbFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kb, "kb", "", "knowledge base directory (default: ./.quarry, found upward like .git; or $QUARRY_KB)")
	cmd.Flags().StringVarP(&f.collection, "collection", "c", "", "collection (default: the configured one, \"default\")")
	cmd.Flags().StringVar(&f.store, "store", "", "store URL, overriding the configured one (embedded:DIR, postgres://…)")
}

// openKB opens the knowledge base the flags name (quarry.Open). With
// create, a missing knowledge base is created in ./.quarry (the first
// writing command does that); without it, a missing one is an error.
func openKB(ctx context.Context, f *kbFlags, create bool, opts ...quarry.Option) (*quarry.KB, error) {
	base := []quarry.Option{quarry.WithStore(f.store), quarry.WithCollection(f.collection)}
	if create {
		base = append(base, quarry.Create())
	}
	k, err := quarry.Open(ctx, f.kb, append(base, opts...)...)
	return k, cliErr(err)
}

// cliErr gives an error from the core its exit code: a request that is
// wrong as sent (a bad option, filter or spec) is a usage error.
func cliErr(err error) error {
	var fe *filter.Error
	var se *filter.SyntaxError
	if err != nil && (errors.Is(err, quarry.ErrInvalid) || errors.As(err, &fe) || errors.As(err, &se)) {
		return usageErr(err)
	}
	return err
}

// scratch points f at a new temporary knowledge base unless --kb was given,
// and returns the function that removes it.
func (f *kbFlags) scratch(prefix string) (func(), error) {
	if f.kb != "" {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	f.kb = dir
	return func() { os.RemoveAll(dir) }, nil
}
