package quarry

import (
	"context"
	"fmt"

	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/llm"
	llmspec "github.com/quarry-rag/quarry/llm/spec"
	"github.com/quarry-rag/quarry/rag"
)

// RetrievalEval is a retrieval evaluation on a BEIR-layout dataset
// (corpus.jsonl, queries.jsonl, qrels/test.tsv).
type RetrievalEval struct {
	// Dataset is the dataset's folder.
	Dataset string
	// Configs name eval.Configs ("all" for every one); default keyword.
	Configs []string
	// Metrics default to eval.DefaultMetrics; gates add theirs.
	Metrics []string
	// Gates such as "ndcg@10>=0.67" judge the first configuration.
	Gates []string
	// TopK is the results per query (default 100).
	TopK int
}

// EvalRetrieval indexes the dataset's corpus into the default collection
// (one unsplit chunk per document, unless it already holds that many) and
// scores every configuration's rankings against the judgements.
func (kb *KB) EvalRetrieval(ctx context.Context, req RetrievalEval) (*eval.RetrievalReport, error) {
	opt, err := eval.ParseRetrievalOptions(req.Configs, req.Metrics, req.Gates, req.TopK)
	if err != nil {
		return nil, invalid(err)
	}
	ds, err := eval.LoadBEIR(req.Dataset)
	if err != nil {
		return nil, err
	}
	c, err := kb.StoreCollection(ctx, "", true)
	if err != nil {
		return nil, err
	}
	if err := kb.CheckModel(c); err != nil {
		return nil, err
	}
	return eval.RunRetrieval(ctx, c, kb.emb, req.Dataset, ds, opt)
}

// AnswerEval is an answer evaluation on a golden set (JSONL: question,
// reference, sources).
type AnswerEval struct {
	Golden string
	// Corpus is recorded in the report: the folders the caller ingested.
	Corpus string
	// Judge is "deterministic" (the default: no model) or "llm", which
	// judges with JudgeModel, else the llm setting.
	Judge, JudgeModel string
	// Mode, TopK and Post configure every answer; Compare adds
	// configurations, each a comma-separated post list ("none" for none).
	Mode    string
	TopK    int
	Post    []string
	Compare []string
	// MinRelevance is every answer's relevance floor (AskRequest).
	MinRelevance float64
	// Gates such as "faithfulness>=0.85" judge the first configuration.
	Gates []string
}

// EvalAnswers answers every golden question with each configuration,
// through Ask as any caller would, and judges the answers.
func (kb *KB) EvalAnswers(ctx context.Context, req AnswerEval) (*eval.AnswerReport, error) {
	var gates []eval.AnswerGate
	for _, s := range req.Gates {
		g, err := eval.ParseAnswerGate(s)
		if err != nil {
			return nil, invalid(err)
		}
		gates = append(gates, g)
	}
	golden, err := eval.LoadGolden(req.Golden)
	if err != nil {
		return nil, invalid(err)
	}
	judge, err := kb.judge(req.Judge, req.JudgeModel)
	if err != nil {
		return nil, err
	}
	answerer := func(c eval.AnswerConfig) (eval.Answerer, error) {
		a := answerer{kb: kb, req: AskRequest{TopK: req.TopK, Mode: req.Mode, Post: c.Post, MinRelevance: req.MinRelevance}}
		return a, kb.CheckAsk(ctx, Developer(), a.req)
	}
	rep, err := eval.RunAnswers(ctx, golden, eval.AnswerConfigs(req.Post, req.Compare), answerer, judge, gates)
	if err != nil {
		return nil, err
	}
	rep.Golden, rep.Corpus = req.Golden, req.Corpus
	return rep, nil
}

// judge opens the named judge; the LLM judge's model defaults to the llm
// setting.
func (kb *KB) judge(kind, spec string) (eval.Judge, error) {
	var m llm.ChatModel
	if kind == "llm" {
		if spec == "" {
			spec = kb.cfg.LLM
		}
		var err error
		if m, err = llmspec.Open(spec); err != nil {
			return nil, invalid(fmt.Errorf("judge model: %w", err))
		}
	}
	j, err := eval.NewJudge(kind, m, spec)
	return j, invalid(err)
}

// answerer asks the knowledge base with one configuration's options.
type answerer struct {
	kb  *KB
	req AskRequest
}

func (a answerer) Ask(ctx context.Context, r rag.Request) (*rag.Answer, error) {
	req := a.req
	req.Question = r.Question
	res, err := a.kb.Ask(ctx, Developer(), req)
	if err != nil {
		return nil, err
	}
	return res.Raw, nil
}
