package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	llmspec "github.com/quarry-rag/quarry/llm/spec"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/agent"
	"github.com/quarry-rag/quarry/filter"
)

// askFlags are the flags ask and chat share.
type askFlags struct {
	kb      kbFlags
	quality qualityFlags
	filter  string
	// allowRaw accepts raw fragments in filter (--allow-raw-filters).
	allowRaw bool
	topK     int
	mode     string
	model    string
	thread   string
	memory   []string
	// minRelevance is the relevance floor (--min-relevance), 0 for the setting.
	minRelevance float64
	profile      string
	// agent gathers the passages in steps (--agent).
	agent bool
	fe    filter.Expr // the parsed filter
}

func (f *askFlags) register(cmd *cobra.Command) {
	f.kb.register(cmd)
	f.quality.register(cmd)
	cmd.Flags().StringVar(&f.filter, "filter", "", "metadata filter in any syntax; it narrows the passages, never widens a scope")
	rawFilterFlag(cmd, &f.allowRaw)
	cmd.Flags().StringVar(&f.filter, "where", "", "alias of --filter")
	cmd.Flags().IntVarP(&f.topK, "top-k", "k", 0, "passages to retrieve (default: search.top_k, 10)")
	cmd.Flags().StringVar(&f.mode, "mode", "", "auto, keyword, vector or hybrid (default: search.mode, else hybrid)")
	cmd.Flags().StringVar(&f.model, "model", "", "chat model as provider:model, overriding the llm setting (see quarry ask --help)")
	cmd.Flags().StringVar(&f.thread, "thread", "", "conversation thread: earlier questions and answers are read in context, and this one is added")
	cmd.Flags().StringSliceVar(&f.memory, "memory", nil, "semantic memory: also recall the past exchanges of these threads that match the question")
	profileFlag(cmd, &f.profile)
	cmd.Flags().BoolVar(&f.agent, "agent", false, "gather the passages in steps: triage, searches and expansions, a sufficiency check after each round (bounded by [agent] in config.toml); steps are shown as they happen")
	cmd.Flags().Float64Var(&f.minRelevance, "min-relevance", 0, "abstain when the best passage covers less of the question than this, 0 to 1 (default: search.min_relevance; negative: never)")
}

// open parses the filter and opens the knowledge base with the flags'
// chat model and the post-processors and transforms every answer gets;
// close closes it and flushes its spans.
func (f *askFlags) open(ctx context.Context) (k *quarry.KB, closeKB func(), err error) {
	if f.fe, err = parseFilterFlag(f.filter); err != nil {
		return nil, nil, err
	}
	_, spans, flush, err := tracing(ctx, nil, "ask")
	if err != nil {
		return nil, nil, err
	}
	k, err = openKB(ctx, &f.kb, false, append(append(spans, f.quality.options()...), quarry.WithChatModelSpec(f.model))...)
	if err != nil {
		flush()
		return nil, nil, err
	}
	return k, func() { k.Close(); flush() }, nil
}

// request is the question with the flags' options.
func (f *askFlags) request(question, thread string) quarry.AskRequest {
	return quarry.AskRequest{Question: question, Mode: f.mode, Filter: f.fe, TopK: f.topK, Thread: thread, Memory: f.memory,
		MinRelevance: f.minRelevance, Profile: f.profile, Agent: f.agent}
}

func newAskCmd(stdio IO) *cobra.Command {
	var (
		f      askFlags
		asJSON bool
		stream bool
		schema string
	)
	cmd := &cobra.Command{
		Use:   "ask QUESTION",
		Short: "Answer a question from the knowledge base, citing its sources",
		Long: `Answer a question from the knowledge base. The answer cites the passages it rests on as [n],
and the numbered sources follow it with their file, heading or page, and lines.

With no chat model configured, the answer is extractive: the sentences of the best passages that
answer the question, quoted and each cited. Set a chat model with llm in config.toml, the
QUARRY_LLM environment variable or --model:

` + llmspec.Help + `

--thread keeps a conversation: the thread's earlier questions and answers are read in context.
--memory T1,T2 recalls the past exchanges of those threads that match the question, beside the documents.
--schema FILE asks for a JSON answer valid against the JSON Schema in FILE (needs a chat model).
--transform rewrites the retrieval query with the chat model (never the question itself);
--post reranks, thresholds, diversifies, expands and packs the passages; --web adds a SearXNG
web search run in parallel, whose failure is reported rather than fatal.`,
		Example: `  quarry ask "How long do refunds take?"
  quarry ask "How long do refunds take?" --model ollama:llama3.2 --stream
  quarry ask "Which products are discontinued?" --filter "tenant = 'acme'" --json
  quarry ask "And gift cards?" --thread support-42
  quarry ask "How do refunds work?" --post rerank=cohere,adaptive,pack=4000 --transform rewrite`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var sch json.RawMessage
			if schema != "" {
				raw, err := os.ReadFile(schema)
				if err != nil {
					return usageErr(fmt.Errorf("--schema: %w", err))
				}
				sch = raw
			}
			k, closeKB, err := f.open(ctx)
			if err != nil {
				return err
			}
			defer closeKB()
			sc := quarry.Scope{AllowRawFilters: f.allowRaw}
			req := f.request(args[0], f.thread)
			req.Schema = sch
			var ans *quarry.AskResult
			if f.agent && !asJSON {
				// Steps are shown as they happen; the answer streams with
				// --stream, else comes whole.
				var steps io.Writer = stdio.Err
				text := io.Discard
				if stream {
					text = stdio.Out
				}
				if ans, err = streamAnswer(ctx, text, steps, k, sc, req); err != nil {
					return err
				}
				if !stream {
					io.WriteString(stdio.Out, ans.Answer)
				}
			} else if stream && !asJSON {
				if ans, err = streamAnswer(ctx, stdio.Out, nil, k, sc, req); err != nil {
					return err
				}
			} else if ans, err = k.Ask(ctx, sc, req); err != nil {
				return cliErr(err)
			} else if asJSON {
				return writeJSON(stdio, ans)
			} else {
				io.WriteString(stdio.Out, ans.Answer)
			}
			fmt.Fprintln(stdio.Out)
			printSources(stdio.Out, ans.Citations)
			for _, e := range ans.SourceErrors {
				fmt.Fprintf(stdio.Err, "quarry ask: %s; the answer comes from the other sources\n", e)
			}
			switch {
			case ans.Abstained && ans.Agent != nil:
				fmt.Fprintf(stdio.Out, "\n(the agent stopped — %s — without enough to answer from)\n", ans.Agent.Stopped)
			case ans.Abstained:
				fmt.Fprintf(stdio.Out, "\n(no passage was relevant enough: the closest covers %.0f%% of the question, under search.min_relevance; --min-relevance -1 answers from it anyway)\n", 100*ans.Relevance)
			case ans.Extractive:
				fmt.Fprintln(stdio.Out, "\n(extractive answer: sentences quoted from the sources; set llm in config.toml, QUARRY_LLM or --model for a written one)")
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print the answer as JSON: {"answer","extractive","citations":[{"n","id","source","page","headings","text",…}],…}`)
	cmd.Flags().BoolVar(&stream, "stream", false, "print the answer as the model writes it")
	cmd.Flags().StringVar(&schema, "schema", "", "JSON Schema file: answer with JSON valid against it")
	return cmd
}

// streamAnswer writes an answer to w as it is written, and an agent's
// steps to steps when it is not nil, and returns the answer.
func streamAnswer(ctx context.Context, w, steps io.Writer, k *quarry.KB, sc quarry.Scope, req quarry.AskRequest) (*quarry.AskResult, error) {
	events, err := k.AskStream(ctx, sc, req)
	if err != nil {
		return nil, cliErr(err)
	}
	var ans *quarry.AskResult
	for ev, err := range events {
		if err != nil {
			return nil, err
		}
		switch {
		case ev.Result != nil:
			ans = ev.Result
		case ev.Step != nil:
			if steps != nil {
				fmt.Fprintln(steps, formatStep(*ev.Step))
			}
		default:
			io.WriteString(w, ev.Text)
		}
	}
	return ans, nil
}

// printSources lists cited passages under the answer.
func printSources(w io.Writer, cites []quarry.Passage) {
	if len(cites) == 0 {
		return
	}
	fmt.Fprintln(w, "\nSources:")
	for _, c := range cites {
		fmt.Fprintf(w, "  [%d] %s\n", c.Rank, c.Location)
	}
}

func newChatCmd(stdio IO) *cobra.Command {
	var f askFlags
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with the knowledge base: questions on standard input, cited answers streamed",
		Long: `Talk with the knowledge base. Each line is a question; answers stream as they are written and
cite their sources as [n]. The conversation is a thread kept in the store, so follow-up questions
are read in context; --thread continues an earlier one.

  /sources   the sources of the last answer
  /new       start a new thread
  /exit      leave (so does end of input)

The chat model is chosen as for quarry ask; with none, answers are extractive.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			k, closeKB, err := f.open(ctx)
			if err != nil {
				return err
			}
			defer closeKB()
			thread := f.thread
			_, noThreads := k.Store().Threads()
			if noThreads != nil {
				fmt.Fprintln(stdio.Err, "quarry chat: this store keeps no threads; each question stands alone")
			} else if thread == "" {
				thread = uuid.NewString()
			}
			sc := quarry.Scope{AllowRawFilters: f.allowRaw}
			interactive := isTerminal(stdio.Out)
			fmt.Fprintf(stdio.Err, "quarry chat: thread %s · /sources, /new, /exit\n", orNone(thread))
			var last *quarry.AskResult
			sc2 := bufio.NewScanner(stdio.In)
			sc2.Buffer(make([]byte, 64<<10), 1<<20)
			for {
				if interactive {
					io.WriteString(stdio.Out, "> ")
				}
				if !sc2.Scan() {
					return sc2.Err()
				}
				line := strings.TrimSpace(sc2.Text())
				switch {
				case line == "":
					continue
				case line == "/exit" || line == "/quit":
					return nil
				case line == "/new":
					if noThreads == nil {
						thread = uuid.NewString()
					}
					last = nil
					fmt.Fprintf(stdio.Out, "new thread %s\n", orNone(thread))
					continue
				case line == "/sources":
					if last == nil || len(last.Citations) == 0 {
						fmt.Fprintln(stdio.Out, "no sources yet")
					} else {
						printSources(stdio.Out, last.Citations)
					}
					continue
				case strings.HasPrefix(line, "/"):
					fmt.Fprintln(stdio.Out, "commands: /sources, /new, /exit")
					continue
				}
				if last, err = streamAnswer(ctx, stdio.Out, stdio.Err, k, sc, f.request(line, thread)); err != nil {
					return err
				}
				fmt.Fprintln(stdio.Out)
				fmt.Fprintln(stdio.Out)
			}
		},
	}
	f.register(cmd)
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// formatStep is one line about an agent's step, for a person watching.
func formatStep(s agent.Step) string {
	head := fmt.Sprintf("· %d", s.Round)
	switch {
	case s.Triage != nil:
		t := s.Triage
		line := "· triage (" + t.By + "): " + strings.ReplaceAll(t.Kind, "_", "-")
		if len(t.Aspects) > 1 {
			line += " — " + strings.Join(quoteAll(t.Aspects), ", ")
		}
		return line
	case s.Call != nil:
		return fmt.Sprintf("%s %s %s", head, s.Call.Tool, s.Call.Arguments)
	case s.Result != nil:
		r := s.Result
		if r.Error != "" {
			return fmt.Sprintf("%s   %s failed: %s", head, r.Tool, r.Error)
		}
		return fmt.Sprintf("%s   → %d passages, %d new (%d ms)", head, len(r.IDs), r.New, r.ElapsedMS)
	case s.Verdict != nil:
		v := s.Verdict
		word := "not sufficient"
		if v.Sufficient {
			word = "sufficient"
		}
		line := fmt.Sprintf("%s sufficiency (%s): %s", head, v.By, word)
		if v.Reason != "" {
			line += " — " + v.Reason
		}
		if len(v.Next) > 0 {
			line += "; next: " + strings.Join(quoteAll(v.Next), ", ")
		}
		return line
	}
	return head + " " + s.Kind
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
