package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/llm/anthropic"
	"github.com/quarry-rag/quarry/llm/gemini"
	"github.com/quarry-rag/quarry/llm/mistral"
	"github.com/quarry-rag/quarry/llm/ollama"
	"github.com/quarry-rag/quarry/llm/openai"
	"github.com/quarry-rag/quarry/rag"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
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
}

func (f *askFlags) register(cmd *cobra.Command) {
	f.kb.register(cmd)
	f.quality.register(cmd)
	cmd.Flags().StringVar(&f.filter, "filter", "", "metadata filter in any syntax; it narrows the passages, never widens a scope")
	rawFilterFlag(cmd, &f.allowRaw)
	cmd.Flags().StringVar(&f.filter, "where", "", "alias of --filter")
	cmd.Flags().IntVarP(&f.topK, "top-k", "k", 0, "passages to retrieve (default: search.top_k, 10)")
	cmd.Flags().StringVar(&f.mode, "mode", "", "keyword, vector or hybrid (default: search.mode, else hybrid)")
	cmd.Flags().StringVar(&f.model, "model", "", "chat model as provider:model, overriding the llm setting (see `quarry ask --help`)")
	cmd.Flags().StringVar(&f.thread, "thread", "", "conversation thread: earlier questions and answers are read in context, and this one is added")
	cmd.Flags().StringSliceVar(&f.memory, "memory", nil, "semantic memory: also recall the past exchanges of these threads that match the question")
}

// asker is an open knowledge base ready to answer.
type asker struct {
	kb     *kb
	pipe   *rag.Pipeline
	filter filter.Expr
}

func (a *asker) Close() error { return a.kb.Close() }

// openAsker opens the knowledge base and builds the pipeline the flags and
// settings describe.
func openAsker(ctx context.Context, f *askFlags) (*asker, error) {
	k, err := openKB(ctx, &f.kb, false)
	if err != nil {
		return nil, err
	}
	a, err := buildAsker(ctx, k, f)
	if err != nil {
		k.Close()
		return nil, err
	}
	return a, nil
}

func buildAsker(ctx context.Context, k *kb, f *askFlags) (*asker, error) {
	coll, err := k.collection(ctx, false, nil)
	if err != nil {
		return nil, err
	}
	var fe filter.Expr
	if f.filter != "" {
		if fe, err = parseCollectionFilter(f.filter, coll.Config().Schema, f.allowRaw); err != nil {
			return nil, err
		}
	}
	if f.topK < 0 {
		return nil, usageErr(errors.New("--top-k must be positive"))
	}
	mode := f.mode
	if mode == "" {
		mode = k.cfg.Search.Mode
	}
	if mode == "" {
		mode = string(AskMode)
	}
	switch store.Mode(mode) {
	case store.ModeKeyword, store.ModeVector, store.ModeHybrid:
	default:
		return nil, usageErr(fmt.Errorf("--mode %q: use keyword, vector or hybrid", mode))
	}
	model, err := k.chatModel(f.model)
	if err != nil {
		return nil, err
	}
	pipe := &rag.Pipeline{
		Retriever:  &rag.CollectionRetriever{Collection: coll, Embedder: k.embedder, Mode: store.Mode(mode)},
		Model:      model,
		TopK:       f.topK,
		Extractive: rag.Extractive{Embedder: k.embedder},
	}
	if pipe.TopK == 0 {
		pipe.TopK = k.cfg.Search.TopK
	}
	if err := f.quality.apply(pipe, k.embedder); err != nil {
		return nil, err
	}
	if ts, err := k.store.Threads(); err == nil {
		pipe.Threads = ts
		if len(f.memory) > 0 {
			pipe.Memory = &retrieve.ThreadMemory{Threads: ts, Embedder: k.embedder}
		}
	} else if f.thread != "" || len(f.memory) > 0 {
		return nil, err
	}
	return &asker{kb: k, pipe: pipe, filter: fe}, nil
}

// AskMode is the search mode of ask and chat when neither --mode nor
// search.mode says otherwise: hybrid, whatever the embedder. Questions are
// short and worded unlike the text that answers them, and the offline hash
// embedder's word pieces catch what BM25 alone misses ("remove" for
// "removes", "notifications" for "notify"). Measured on the PostgreSQL
// manual with 20 questions whose answering page is known (extractive
// answers, ten passages), counting answers that cite that page:
//
//	keyword  10/20
//	hybrid   14/20
//
// Search keeps DefaultMode, measured on retrieval benchmarks.
const AskMode = store.ModeHybrid

// newChatModel builds the chat model a spec names; "" is none.
func newChatModel(spec string) (llm.ChatModel, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	sp, err := llm.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	switch sp.Provider {
	case llm.ProviderOpenAI, llm.ProviderOpenAICompatible:
		return openai.New(openai.Config{Model: sp.Model, BaseURL: sp.BaseURL})
	case llm.ProviderAnthropic:
		return anthropic.New(anthropic.Config{Model: sp.Model, BaseURL: sp.BaseURL})
	case llm.ProviderOllama:
		return ollama.New(ollama.Config{Model: sp.Model, BaseURL: sp.BaseURL})
	case llm.ProviderGemini:
		return gemini.New(gemini.Config{Model: sp.Model, BaseURL: sp.BaseURL})
	case llm.ProviderMistral:
		return mistral.New(mistral.Config{Model: sp.Model, BaseURL: sp.BaseURL})
	}
	return nil, fmt.Errorf("llm %q: no provider %q in this build", spec, sp.Provider)
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

  openai:MODEL                      OpenAI (OPENAI_API_KEY)
  anthropic:MODEL                   Anthropic (ANTHROPIC_API_KEY)
  gemini:MODEL                      Google Gemini (GEMINI_API_KEY or GOOGLE_API_KEY)
  mistral:MODEL                     Mistral (MISTRAL_API_KEY)
  ollama:MODEL                      Ollama at OLLAMA_HOST (default http://127.0.0.1:11434)
  openai-compatible:MODEL@BASEURL   any OpenAI-compatible server (vLLM, llama.cpp, LM Studio…)

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
			var sch *llm.Schema
			if schema != "" {
				raw, err := os.ReadFile(schema)
				if err != nil {
					return usageErr(fmt.Errorf("--schema: %w", err))
				}
				if !json.Valid(raw) {
					return usageErr(fmt.Errorf("--schema %s: not JSON", schema))
				}
				sch = &llm.Schema{Schema: raw}
			}
			a, err := openAsker(ctx, &f)
			if err != nil {
				return err
			}
			defer a.Close()
			req := rag.Request{Question: args[0], Thread: f.thread, Filter: a.filter, Schema: sch, Memory: f.memory}
			if sch != nil && a.pipe.Model == nil {
				return usageErr(fmt.Errorf("--schema: %w: set llm in config.toml, QUARRY_LLM or --model", rag.ErrNeedsModel))
			}
			if asJSON {
				ans, err := a.pipe.Ask(ctx, req)
				if err != nil {
					return err
				}
				enc := json.NewEncoder(stdio.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(ans)
			}
			var ans *rag.Answer
			if stream {
				for ev, err := range a.pipe.Stream(ctx, req) {
					if err != nil {
						return err
					}
					if ev.Answer != nil {
						ans = ev.Answer
						continue
					}
					io.WriteString(stdio.Out, ev.Text)
				}
			} else {
				if ans, err = a.pipe.Ask(ctx, req); err != nil {
					return err
				}
				io.WriteString(stdio.Out, ans.Text)
			}
			fmt.Fprintln(stdio.Out)
			printSources(stdio.Out, ans.Citations)
			for _, e := range ans.SourceErrors {
				fmt.Fprintf(stdio.Err, "quarry ask: %s; the answer comes from the other sources\n", e)
			}
			if ans.Extractive {
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

// printSources lists cited passages under the answer.
func printSources(w io.Writer, cites []rag.Citation) {
	if len(cites) == 0 {
		return
	}
	fmt.Fprintln(w, "\nSources:")
	for _, c := range cites {
		fmt.Fprintf(w, "  [%d] %s\n", c.N, c.Location())
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
			a, err := openAsker(ctx, &f)
			if err != nil {
				return err
			}
			defer a.Close()
			thread := f.thread
			if a.pipe.Threads == nil {
				fmt.Fprintln(stdio.Err, "quarry chat: this store keeps no threads; each question stands alone")
			} else if thread == "" {
				thread = uuid.NewString()
			}
			interactive := isTerminal(stdio.Out)
			fmt.Fprintf(stdio.Err, "quarry chat: thread %s · /sources, /new, /exit\n", orNone(thread))
			var last *rag.Answer
			sc := bufio.NewScanner(stdio.In)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for {
				if interactive {
					io.WriteString(stdio.Out, "> ")
				}
				if !sc.Scan() {
					return sc.Err()
				}
				line := strings.TrimSpace(sc.Text())
				switch {
				case line == "":
					continue
				case line == "/exit" || line == "/quit":
					return nil
				case line == "/new":
					if a.pipe.Threads != nil {
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
				req := rag.Request{Question: line, Thread: thread, Filter: a.filter, Memory: f.memory}
				for ev, err := range a.pipe.Stream(ctx, req) {
					if err != nil {
						return err
					}
					if ev.Answer != nil {
						last = ev.Answer
						continue
					}
					io.WriteString(stdio.Out, ev.Text)
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
