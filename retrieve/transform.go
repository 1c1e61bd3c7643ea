package retrieve

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/quarry-rag/quarry/llm"
)

// Expander is a pre-processor that turns the retrieval query into several
// (sub-questions, paraphrases). A pipeline retrieves each under the same
// scopes and fuses the lists with reciprocal-rank fusion.
type Expander interface {
	Expand(ctx context.Context, query string, history []llm.Message) ([]string, error)
}

// Quarry's own instructions for each transform. The question arrives in one
// user turn inside <ORIGINAL-QUERY>, after the conversation so far when
// there is one.
const (
	RewriteInstructions = `You turn a user's message into the best search query for a knowledge base.

The message is inside <ORIGINAL-QUERY>; earlier turns of the conversation, if any, are inside <CONVERSATION>. Write one self-contained search query: resolve pronouns and references from the conversation, keep every name, number and technical term, add the precise terms a document answering it would use, and drop greetings and filler. Do not answer the question.

Reply with the query alone, on one line.`

	HyDEInstructions = `You help a search engine find documents by imagining them.

The user's message is inside <ORIGINAL-QUERY>; earlier turns of the conversation, if any, are inside <CONVERSATION>. Write a short passage, as it might appear in documentation or a handbook, that would answer the question directly. Use the vocabulary such a document would use. It is only used to search: write plausible content, do not hedge, and do not mention that it is hypothetical.

Reply with the passage alone, at most 120 words.`

	DecomposeInstructions = `You split a user's message into the separate questions a search engine must answer to respond to it.

The message is inside <ORIGINAL-QUERY>; earlier turns of the conversation, if any, are inside <CONVERSATION>. If the message asks several things, or needs facts that would be found in different places, write one self-contained search question per line (at most %d). If it is a single simple question, repeat it as the only line. Do not answer.

Reply with the questions alone, one per line, without numbering.`

	MultiQueryInstructions = `You help a search engine by rephrasing a user's message.

The message is inside <ORIGINAL-QUERY>; earlier turns of the conversation, if any, are inside <CONVERSATION>. Write %d different search queries that ask for the same information in other words: use synonyms, the terms an expert would use, and the terms a beginner would use. Each must stand alone.

Reply with the queries alone, one per line, without numbering.`
)

// Limits on what a model's reply may become.
const (
	maxQueryChars   = 1000
	maxPassageChars = 4000
	// DefaultMaxSubQueries caps Decompose and DefaultVariants is how many
	// paraphrases MultiQuery asks for.
	DefaultMaxSubQueries = 4
	DefaultVariants      = 3
)

// Rewrite has a chat model rewrite the retrieval query into a standalone,
// precise search query (follow-ups resolved from the conversation).
type Rewrite struct{ Model llm.ChatModel }

// Rewrite implements rag.PreProcessor.
func (t Rewrite) Rewrite(ctx context.Context, query string, history []llm.Message) (string, error) {
	out, err := ask(ctx, t.Model, "rewrite", RewriteInstructions, query, history)
	if err != nil {
		return "", err
	}
	if l := lines(out, 1); len(l) > 0 {
		return cut(l[0], maxQueryChars), nil
	}
	return query, nil
}

// HyDE has a chat model write a hypothetical passage answering the
// question and retrieves with it (Hypothetical Document Embeddings): a
// passage sits nearer its real counterparts than a question does.
type HyDE struct{ Model llm.ChatModel }

// Rewrite implements rag.PreProcessor.
func (t HyDE) Rewrite(ctx context.Context, query string, history []llm.Message) (string, error) {
	out, err := ask(ctx, t.Model, "hyde", HyDEInstructions, query, history)
	if err != nil {
		return "", err
	}
	if out = strings.TrimSpace(out); out == "" {
		return query, nil
	}
	return cut(out, maxPassageChars), nil
}

// Decompose has a chat model split a compound question into sub-questions,
// each retrieved on its own; the original is kept as the first query.
type Decompose struct {
	Model llm.ChatModel
	// Max caps the sub-questions; DefaultMaxSubQueries when 0.
	Max int
}

// Expand implements Expander.
func (t Decompose) Expand(ctx context.Context, query string, history []llm.Message) ([]string, error) {
	n := t.Max
	if n <= 0 {
		n = DefaultMaxSubQueries
	}
	out, err := ask(ctx, t.Model, "decompose", fmt.Sprintf(DecomposeInstructions, n), query, history)
	if err != nil {
		return nil, err
	}
	return withOriginal(query, lines(out, n)), nil
}

// Rewrite implements rag.PreProcessor for pipelines that take one query:
// the queries joined by newlines.
func (t Decompose) Rewrite(ctx context.Context, query string, history []llm.Message) (string, error) {
	qs, err := t.Expand(ctx, query, history)
	return strings.Join(qs, "\n"), err
}

// MultiQuery has a chat model paraphrase the question; the original and
// each paraphrase are retrieved and the lists fused.
type MultiQuery struct {
	Model llm.ChatModel
	// N is how many paraphrases to ask for; DefaultVariants when 0.
	N int
}

// Expand implements Expander.
func (t MultiQuery) Expand(ctx context.Context, query string, history []llm.Message) ([]string, error) {
	n := t.N
	if n <= 0 {
		n = DefaultVariants
	}
	out, err := ask(ctx, t.Model, "multi-query", fmt.Sprintf(MultiQueryInstructions, n), query, history)
	if err != nil {
		return nil, err
	}
	return withOriginal(query, lines(out, n)), nil
}

// Rewrite implements rag.PreProcessor for pipelines that take one query:
// the queries joined by newlines.
func (t MultiQuery) Rewrite(ctx context.Context, query string, history []llm.Message) (string, error) {
	qs, err := t.Expand(ctx, query, history)
	return strings.Join(qs, "\n"), err
}

// TransformMessage is the single user turn of a transform: the
// conversation so far, when there is one, then the query inside
// <ORIGINAL-QUERY>, with any of those tags inside the text neutralised so
// the text cannot close its block.
func TransformMessage(query string, history []llm.Message) string {
	var b strings.Builder
	if len(history) > 0 {
		b.WriteString("<CONVERSATION>\n")
		for _, m := range history {
			if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant {
				continue
			}
			b.WriteString(string(m.Role) + ": " + fence(m.Content) + "\n")
		}
		b.WriteString("</CONVERSATION>\n")
	}
	b.WriteString("<ORIGINAL-QUERY>" + fence(query) + "</ORIGINAL-QUERY>")
	return b.String()
}

var transformTag = regexp.MustCompile(`(?i)<(/?(?:ORIGINAL-QUERY|CONVERSATION))`)

func fence(s string) string { return transformTag.ReplaceAllString(s, `<\$1`) }

// ask sends one transform request.
func ask(ctx context.Context, m llm.ChatModel, name, instructions, query string, history []llm.Message) (string, error) {
	if m == nil {
		return "", fmt.Errorf("%s: %w", name, errNoModel)
	}
	zero := 0.0
	resp, err := m.Generate(ctx, llm.Request{
		Messages:    []llm.Message{llm.System(instructions), llm.User(TransformMessage(query, history))},
		Temperature: &zero,
		MaxTokens:   512,
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return resp.Text, nil
}

var errNoModel = errors.New("query transforms need a chat model")

// listMarker matches the numbering or bullet a model may put before a line.
var listMarker = regexp.MustCompile(`^\s*(?:[-*•]|\d+[.)]|Q\d*:|Query:|Question:)\s*`)

// lines returns the reply's non-empty lines, numbering, bullets and
// quotes removed, at most n.
func lines(s string, n int) []string {
	var out []string
	for l := range strings.Lines(s) {
		l = strings.Trim(strings.TrimSpace(listMarker.ReplaceAllString(l, "")), "\"'`")
		if l == "" || strings.HasPrefix(l, "<") {
			continue
		}
		out = append(out, cut(l, maxQueryChars))
		if len(out) == n {
			break
		}
	}
	return out
}

// withOriginal puts the original query first and drops repeats.
func withOriginal(query string, qs []string) []string {
	out := []string{query}
	seen := map[string]bool{strings.ToLower(query): true}
	for _, q := range qs {
		if k := strings.ToLower(q); !seen[k] {
			seen[k] = true
			out = append(out, q)
		}
	}
	return out
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// Transformer is what a query transform is to a pipeline: it rewrites the
// retrieval query (rag.PreProcessor has the same method).
type Transformer interface {
	Rewrite(ctx context.Context, query string, history []llm.Message) (string, error)
}

// TransformNames are the names NewTransform takes.
const TransformNames = "rewrite, hyde, decompose, multi-query"

// ErrNeedsModel is returned for a transform asked for without a chat model.
var ErrNeedsModel = errors.New("needs a chat model: set llm in config.toml, QUARRY_LLM or --model")

// NewTransform builds the query transform a name gives (TransformNames),
// written by model.
func NewTransform(name string, model llm.ChatModel) (Transformer, error) {
	var t Transformer
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "rewrite":
		t = Rewrite{Model: model}
	case "hyde":
		t = HyDE{Model: model}
	case "decompose":
		t = Decompose{Model: model}
	case "multi-query", "multiquery":
		t = MultiQuery{Model: model}
	default:
		return nil, fmt.Errorf("transform %q: use %s", name, TransformNames)
	}
	if model == nil {
		return nil, fmt.Errorf("transform %s %w", name, ErrNeedsModel)
	}
	return t, nil
}
