// Package cli implements the quarry command line. Every command calls the
// library; no command holds logic of its own beyond parsing flags and
// printing results.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/internal/buildinfo"
)

// Exit codes (ARCHITECTURE §10).
const (
	ExitOK      = 0
	ExitRuntime = 1 // the command failed while doing its work
	ExitUsage   = 2 // the command line or an argument (flag, filter, schema) is invalid
	ExitGate    = 3 // a quality gate failed
)

// ExitError carries the exit code a failure maps to.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// usageErr marks err as a usage error (exit 2); nil stays nil.
func usageErr(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

// IO is where a command reads and writes; tests swap it for buffers.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Run executes the quarry command line with args (without the program name)
// and returns the process exit code.
func Run(ctx context.Context, args []string, stdio IO) int {
	root := NewRoot(stdio)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitRuntime
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code
	} else if isFlagError(err) || strings.HasPrefix(err.Error(), "unknown command") {
		code = ExitUsage
	}
	fmt.Fprintf(stdio.Err, "quarry: %v\n", err)
	return code
}

// flagError marks errors cobra reports for bad flags and arguments.
type flagError struct{ error }

func isFlagError(err error) bool {
	var fe flagError
	return errors.As(err, &fe)
}

// NewRoot builds the command tree.
func NewRoot(stdio IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "quarry",
		Short: "Quarry turns documents into a knowledge base you can search and ask, with cited answers",
		Long: `Quarry turns a pile of documents into a knowledge base that people and AI agents
can search and ask questions of, with answers that cite their sources.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Version(),
	}
	root.SetVersionTemplate("quarry {{.Version}}\n")
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError{err} })
	root.AddCommand(newInitCmd(stdio), newIngestCmd(stdio), newSearchCmd(stdio), newDeleteCmd(stdio), newStatusCmd(stdio), newDemoCmd(stdio), newEvalCmd(stdio), newMigrateCmd(stdio), newSetupCmd(stdio))
	root.AddCommand(newFilterCmd(stdio))
	root.AddCommand(newChunkCmd(stdio))
	root.AddCommand(newBenchCmd(stdio))
	root.AddCommand(newMCPCmd(stdio))
	root.AddCommand(newServeCmd(stdio), newKeysCmd(stdio))
	root.AddCommand(newAskCmd(stdio), newChatCmd(stdio))
	root.AddCommand(newTreeCmd(stdio), newHealthCmd(stdio), newLinksCmd(stdio), newDoctorCmd(stdio), newNewCmd(stdio), newImportCmd(stdio), newObjectsCmd(stdio), newProfilesCmd(stdio), newGraphCmd(stdio))
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print Quarry's version (the module version, or the commit of a build from a checkout)",
		Args:  exactArgs(0),
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(stdio.Out, "quarry %s\n", buildinfo.Version())
		},
	})
	return root
}

// exactArgs is cobra.ExactArgs with a usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return flagError{fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
		}
		return nil
	}
}

// readArg reads the file an argument names, or standard input for "-",
// up to limit bytes and one more, so the core can refuse what is over.
func readArg(stdio IO, arg string, limit int64) ([]byte, error) {
	in := stdio.In
	if arg != "-" {
		f, err := os.Open(arg)
		if err != nil {
			return nil, usageErr(err)
		}
		defer f.Close()
		in = f
	}
	b, err := io.ReadAll(io.LimitReader(in, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", arg, err)
	}
	return b, nil
}
