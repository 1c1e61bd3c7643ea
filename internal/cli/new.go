package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/internal/scaffold"
)

func newNewCmd(stdio IO) *cobra.Command {
	var module string
	cmd := &cobra.Command{
		Use:   "new rag DIR",
		Short: "Start a Go program built on Quarry: a module with a main, a test and a sample document",
		Long: `Write a Go program that answers questions from a folder with Quarry: go.mod, main.go
(open the knowledge base, ingest docs/, answer the question on the command line with citations),
main_test.go (the same through an in-memory knowledge base and a scripted chat model, offline),
docs/refunds.md, README.md and .gitignore. DIR must not exist or be empty.`,
		Example: `  quarry new rag support-bot && cd support-bot && go mod tidy && go test ./... && go run . "How long do refunds take?"`,
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := scaffold.New(scaffold.Options{Kind: args[0], Dir: args[1], Module: module, QuarryVersion: scaffold.ReleaseVersion()})
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(stdio.Out, "wrote %s in %s\nnext: cd %s && go mod tidy && go test ./... && go run .\n", strings.Join(files, ", "), args[1], args[1])
			return nil
		},
	}
	cmd.Flags().StringVar(&module, "module", "", "the module path (default: the folder's name)")
	return cmd
}
