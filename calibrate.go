package quarry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/quarry-rag/quarry/eval"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/retrieve"
	"github.com/quarry-rag/quarry/store"
)

// AutoCalibrateDocuments is the size from which an ingest calibrates a
// collection that has no calibration (search.calibrate = auto): smaller
// collections keep the fixed rule until someone runs quarry eval
// --calibrate. At this size a calibration takes a few seconds.
const AutoCalibrateDocuments = 1000

// RecalibrateGrowth is how many times larger than at its calibration a
// collection grows before an ingest calibrates it again: what ranks a
// collection's text best can change as the text does.
const RecalibrateGrowth = 4

// MinCalibrationDocuments is the smallest collection Calibrate measures.
const MinCalibrationDocuments = eval.MinCalibrationDocuments

// MaxCalibrationQueries bounds a calibration's pseudo-queries: each is
// ranked by every configuration.
const MaxCalibrationQueries = 5000

// CalibrateRequest asks for a collection's search default to be measured
// (eval.Calibrate) and recorded.
type CalibrateRequest struct {
	// Collection is the collection; "" for the default.
	Collection string
	// Queries is the number of pseudo-queries; eval.CalibrationQueries when 0.
	Queries int
	// Reset removes the collection's calibration instead: searches follow
	// the fixed rule again.
	Reset bool
	// DryRun measures without recording.
	DryRun bool
	// Golden, when set, is a golden set (JSONL) whose answerable questions
	// check each configuration: their MRR@10 against the cases' sources.
	Golden string
	// BEIR, when set, is a BEIR-layout dataset indexed into the collection
	// first (EvalRetrieval) and scored on its real judgements with
	// Configs (default: every calibration configuration), so the
	// calibration's choice can be checked against them.
	BEIR    string
	Configs []string
}

// CalibrateResult is a calibration and, with a golden set, each
// configuration's MRR@10 on its questions.
type CalibrateResult struct {
	Collection string `json:"collection"`
	// Calibration is nil after a reset.
	Calibration *retrieve.Calibration `json:"calibration,omitempty"`
	// Saved is set when the calibration was recorded as the collection's
	// default.
	Saved bool `json:"saved"`
	// GoldenMRR is each configuration's MRR@10 on the golden questions,
	// in the calibration's order; GoldenCases how many questions counted.
	GoldenMRR   []retrieve.ConfigScore `json:"golden_mrr,omitempty"`
	GoldenCases int                    `json:"golden_cases,omitempty"`
	// Retrieval is the BEIR dataset's report, with CalibrateRequest.BEIR.
	Retrieval *eval.RetrievalReport `json:"retrieval,omitempty"`
	// SearchDefault is what a search that asks for no mode runs now
	// (CollectionInfo.SearchDefault): the choice once saved, unless the
	// knowledge base's search.mode names a mode, which wins.
	SearchDefault string `json:"search_default"`
	// ModeSet is the configured search.mode when it overrides the
	// calibration.
	ModeSet string `json:"mode_set,omitempty"`
}

// Calibrate measures which retrieval configuration ranks a collection's
// own text best and records it as the collection's search default: the
// configuration a search that asks for no mode runs. It reads every chunk
// and changes what every caller's searches do, so it is open only to
// scopes that may write and reach every document.
func (kb *KB) Calibrate(ctx context.Context, sc Scope, req CalibrateRequest) (*CalibrateResult, error) {
	if sc.ReadOnly || !sc.MayReachAll() {
		return nil, fmt.Errorf("%w: calibrating a collection is not open to this caller (a read-only key or a scope filter)", ErrForbidden)
	}
	if req.Queries < 0 || req.Queries > MaxCalibrationQueries {
		return nil, invalid(fmt.Errorf("queries %d: give 1 to %d (default %d)", req.Queries, MaxCalibrationQueries, eval.CalibrationQueries))
	}
	if (req.Golden != "" || req.BEIR != "") && sc.NoServerPaths {
		return nil, fmt.Errorf("%w: a golden set or a dataset is read from the server's files, which are not open to this caller", ErrForbidden)
	}
	if req.BEIR != "" && (req.Golden != "" || req.Reset) {
		return nil, invalid(errors.New("calibrate: a BEIR dataset is calibrated on its own judgements; give it without a golden set or a reset"))
	}
	var beir *eval.RetrievalReport
	if req.BEIR != "" {
		configs := req.Configs
		if len(configs) == 0 {
			configs = []string{"calibration"}
		}
		var err error
		if beir, err = kb.EvalRetrieval(ctx, RetrievalEval{Dataset: req.BEIR, Configs: configs, Metrics: []string{"ndcg@10"}, TopK: 100}); err != nil {
			return nil, err
		}
	}
	c, err := kb.collection(ctx, sc, req.Collection, false)
	if err != nil {
		return nil, err
	}
	out := &CalibrateResult{Collection: c.Name(), Retrieval: beir}
	if req.Reset {
		if err := retrieve.SaveCalibration(ctx, c, nil); err != nil {
			return nil, calibrateErr(err)
		}
		return out, kb.describeDefault(ctx, c, out)
	}
	cal, err := kb.calibrate(ctx, c, req.Queries)
	if err != nil {
		return nil, err
	}
	out.Calibration = cal
	if req.Golden != "" {
		cases, err := eval.LoadGolden(req.Golden)
		if err != nil {
			return nil, invalid(err)
		}
		for _, cfg := range eval.CalibrationConfigs()[:len(cal.Scores)] {
			mrr, n, err := eval.GoldenMRR(ctx, c, kb.emb, cases, cfg, 10)
			if err != nil {
				return nil, invalid(err)
			}
			out.GoldenMRR = append(out.GoldenMRR, retrieve.ConfigScore{Name: cfg.Name, Mode: cfg.Mode, Fusion: cfg.Fusion, Score: mrr})
			out.GoldenCases = n
		}
	}
	if !req.DryRun {
		if err := retrieve.SaveCalibration(ctx, c, cal); err != nil {
			return nil, calibrateErr(err)
		}
		out.Saved = true
	}
	return out, kb.describeDefault(ctx, c, out)
}

// describeDefault records what searches that ask for no mode now run on c.
func (kb *KB) describeDefault(ctx context.Context, c *store.Collection, out *CalibrateResult) error {
	mode, err := kb.searchDefault(ctx, c)
	if err != nil {
		return err
	}
	out.SearchDefault = mode.Config()
	if !mode.Default && !mode.Calibrated {
		out.ModeSet = kb.cfg.Search.Mode
	}
	return nil
}

// calibrate runs eval.Calibrate against the fixed rule for the knowledge
// base's embedder. A collection built with another embedder is calibrated
// among keyword configurations only, which need no vectors.
func (kb *KB) calibrate(ctx context.Context, c *store.Collection, queries int) (*retrieve.Calibration, error) {
	rule := string(retrieve.DefaultMode(kb.emb.Model()))
	cal, err := eval.Calibrate(ctx, c, kb.emb, eval.CalibrateOptions{Queries: queries, Rule: rule})
	if errors.Is(err, eval.ErrTooSmall) {
		return nil, invalid(err)
	}
	return cal, err
}

func calibrateErr(err error) error {
	if errors.Is(err, store.ErrUnsupported) {
		return fmt.Errorf("%w: this store keeps no collection settings, so searches keep the fixed rule", store.ErrUnsupported)
	}
	return err
}

// autoCalibrate calibrates a collection after an ingest wrote to it, when
// search.calibrate is auto, it holds AutoCalibrateDocuments chunks or more
// and has no calibration for the knowledge base's embedder, or one made
// when it was RecalibrateGrowth times smaller. A calibration
// that fails is logged, never the ingest's failure: searches then keep the
// fixed rule.
func (kb *KB) autoCalibrate(ctx context.Context, c *store.Collection, rep *ingest.Report) {
	if kb.cfg.Search.Calibrate != "auto" || rep.Written == 0 || ctx.Err() != nil {
		return
	}
	if !c.KeepsSettings() {
		return
	}
	old, err := retrieve.LoadCalibration(ctx, c)
	if err != nil {
		return
	}
	n, err := c.Count(ctx, nil)
	if err != nil || n < AutoCalibrateDocuments {
		return
	}
	if old != nil && old.Model == kb.emb.Model().String() && n < RecalibrateGrowth*old.Documents {
		return
	}
	cal, err := kb.calibrate(ctx, c, 0)
	if err == nil {
		err = retrieve.SaveCalibration(ctx, c, cal)
	}
	if err != nil {
		kb.log.Warn("calibration after ingest failed; searches keep the fixed rule", "collection", c.Name(), "err", err)
		return
	}
	rep.Calibrated = cal.Choice.Name
	kb.log.Info("calibrated the collection's search default", "collection", c.Name(), "choice", cal.Choice.Name,
		"score", cal.Choice.Score, "rule", cal.Rule, "queries", cal.Queries, "seconds", cal.Seconds)
}

// WriteTable writes the result as a table: every configuration's figure
// on the pseudo-queries and, with a golden set, its MRR@10, the choice
// marked.
func (r *CalibrateResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	cal := r.Calibration
	if cal == nil {
		fmt.Fprintf(tw, "collection %q: calibration removed; searches that ask for no mode run %s\n", r.Collection, r.SearchDefault)
		return tw.Flush()
	}
	fmt.Fprintf(tw, "collection %q: %d pseudo-queries over %d chunks, %s, %.1fs (model %s)\n",
		r.Collection, cal.Queries, cal.Documents, cal.Metric, cal.Seconds, cal.Model)
	head := "config\t" + cal.Metric
	if len(r.GoldenMRR) > 0 {
		head += fmt.Sprintf("\tgolden mrr@10 (%d)", r.GoldenCases)
	}
	fmt.Fprintln(tw, head+"\t")
	for i, s := range cal.Scores {
		line := fmt.Sprintf("%s\t%.4f", s.Name, s.Score)
		if i < len(r.GoldenMRR) {
			line += fmt.Sprintf("\t%.4f", r.GoldenMRR[i].Score)
		}
		fmt.Fprintln(tw, line+"\t"+cal.Role(s.Name))
	}
	switch {
	case !r.Saved:
		fmt.Fprintf(tw, "not saved (dry run): searches that ask for no mode keep running %s\n", r.SearchDefault)
	case r.ModeSet != "":
		fmt.Fprintf(tw, "saved, but search.mode = %q is set, and it wins: searches that ask for no mode run %s\n", r.ModeSet, r.SearchDefault)
	case cal.Choice.Name == cal.Rule:
		fmt.Fprintf(tw, "saved: no configuration beat the rule (%s) clearly; searches keep it\n", cal.Rule)
	default:
		fmt.Fprintf(tw, "saved: searches that ask for no mode run %s\n", cal.Choice.Name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Retrieval != nil {
		fmt.Fprintln(w)
		return r.Retrieval.WriteTable(w)
	}
	return nil
}
