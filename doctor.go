package quarry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	embedspec "github.com/quarry-rag/quarry/embed/spec"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
)

// Check is one finding of Doctor.
type Check struct {
	Name string `json:"name"`
	// State is "ok", "warn" (works, but worth knowing) or "fail".
	State  string `json:"state" enum:"ok,warn,fail"`
	Detail string `json:"detail"`
	// Millis is how long the check took.
	Millis int64 `json:"ms"`
}

// Doctor is a self-check of the installation and the knowledge base.
type Doctor struct {
	OK     bool    `json:"ok" doc:"No check failed"`
	Checks []Check `json:"checks"`
}

// Check states.
const (
	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
)

// doctorSample is the built-in corpus the keyword check searches.
var doctorSample = []NewDocument{
	{Text: "Refunds are paid within fourteen days of the return.", Source: "refunds.md"},
	{Text: "Parcels leave the warehouse every weekday before noon.", Source: "shipping.md"},
	{Text: "Gift cards cannot be exchanged for cash.", Source: "gift-cards.md"},
}

// doctorPDF is a one-page PDF whose text the PDF check reads back.
const doctorPDF = "%PDF-1.4\n" +
	"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n" +
	"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n" +
	"3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >> endobj\n" +
	"4 0 obj << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> endobj\n" +
	"5 0 obj << /Length 44 >> stream\nBT /F1 12 Tf 72 720 Td (quarry doctor) Tj ET\nendstream endobj\n" +
	"trailer << /Root 1 0 R >>\n%%EOF\n"

// RunDoctor opens the knowledge base at target (as Open does) and checks
// it (KB.Doctor); without one there, the checks run on an empty one in
// memory and say so.
func RunDoctor(ctx context.Context, target string, opts ...Option) (*Doctor, error) {
	kb, err := Open(ctx, target, opts...)
	missing := errors.Is(err, ErrNoKB)
	if missing {
		kb, err = Open(ctx, "memory:")
	}
	if err != nil {
		return nil, err
	}
	defer kb.Close()
	d, err := kb.Doctor(ctx, Developer())
	if err != nil {
		return nil, err
	}
	if missing {
		d.Checks = append([]Check{{Name: "knowledge base", State: CheckWarn,
			Detail: "none here (quarry ingest PATH creates ./.quarry): the checks ran on an empty one in memory"}}, d.Checks...)
	}
	return d, nil
}

// Doctor checks, without the network and without downloading anything,
// what Quarry needs here: the embedder's route (embedding a probe when
// the embedder is offline), keyword search on a built-in sample in a
// scratch embedded store, the PDF engine and its cache, OCR, the store
// and its engine's version, and the default collection's model and
// health. Each check says what it found; OK is false when one failed.
// It names paths and versions, so it is for callers that reach everything.
func (kb *KB) Doctor(ctx context.Context, sc Scope) (*Doctor, error) {
	if !sc.MayReachAll() {
		return nil, fmt.Errorf("%w: the self-check names the server's paths and versions, so it is not open to a caller limited by a filter", ErrForbidden)
	}
	d := &Doctor{OK: true}
	run := func(name string, check func() (string, string)) {
		start := time.Now()
		state, detail := check()
		d.Checks = append(d.Checks, Check{Name: name, State: state, Detail: detail, Millis: time.Since(start).Milliseconds()})
		d.OK = d.OK && state != CheckFail
	}
	run("embedder", func() (string, string) { return kb.doctorEmbedder(ctx) })
	run("keyword search", func() (string, string) { return doctorKeyword(ctx) })
	run("pdf engine", func() (string, string) { return kb.doctorPDF(ctx) })
	run("ocr", func() (string, string) { return kb.doctorOCR(ctx) })
	run("store", func() (string, string) { return kb.doctorStore(ctx) })
	if pa, ok := kb.store.PrivilegeAuditor(); ok {
		run("store privileges", func() (string, string) { return kb.doctorPrivileges(ctx, pa) })
	}
	run("collection", func() (string, string) { return kb.doctorCollection(ctx) })
	return d, nil
}

func (kb *KB) doctorEmbedder(ctx context.Context) (string, string) {
	m := kb.emb.Model()
	route := fmt.Sprintf("%s %s, %d dimensions", m.Provider, m.Model, m.Dimension)
	if sp, err := embedspec.Parse(kb.cfg.Embedder); err == nil && sp.URL != "" {
		route += " at " + sp.URL
	}
	switch m.Provider {
	case "hash", "static":
		vs, err := kb.emb.Embed(ctx, []string{"quarry doctor probe"})
		if err != nil || len(vs) != 1 || len(vs[0]) != m.Dimension {
			return CheckFail, fmt.Sprintf("%s: the probe did not embed: %v", route, err)
		}
		return CheckOK, route + "; a probe embedded offline"
	}
	return CheckOK, route + "; not called (the doctor uses no network)"
}

// doctorKeyword indexes the sample in a scratch embedded store and
// searches it by keywords, the path every installation has.
func doctorKeyword(ctx context.Context) (string, string) {
	dir, err := os.MkdirTemp("", "quarry-doctor-")
	if err != nil {
		return CheckFail, err.Error()
	}
	defer os.RemoveAll(dir)
	k, err := Open(ctx, "embedded:"+dir, WithEmbedderSpec("hash"))
	if err != nil {
		return CheckFail, fmt.Sprintf("open a scratch embedded store: %v", err)
	}
	defer k.Close()
	c := k.Collection("doctor")
	if _, err := c.Add(ctx, doctorSample...); err != nil {
		return CheckFail, fmt.Sprintf("write the sample: %v", err)
	}
	res, err := c.Search(ctx, "when are refunds paid", Mode("keyword"), TopK(1))
	if err != nil {
		return CheckFail, fmt.Sprintf("search the sample: %v", err)
	}
	if len(res.Results) != 1 || res.Results[0].Source != "refunds.md" {
		return CheckFail, fmt.Sprintf("the sample's search found %v, want refunds.md", res.Results)
	}
	return CheckOK, "SQLite and BM25 found the sample's answer"
}

func (kb *KB) doctorPDF(ctx context.Context) (string, string) {
	cache := kb.CacheDir()
	if cache == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(dir, "quarry")
		}
	}
	docs, err := kb.Loader().ReadBytes(ctx, "doctor.pdf", []byte(doctorPDF))
	if err != nil {
		return CheckFail, fmt.Sprintf("PDFium could not read a one-page PDF: %v", err)
	}
	if len(docs) != 1 || !strings.Contains(docs[0].Content, "quarry doctor") {
		return CheckFail, "PDFium read the one-page PDF wrong"
	}
	return CheckOK, "PDFium (WebAssembly) read a one-page PDF; compiled code cached in " + cache
}

func (kb *KB) doctorOCR(ctx context.Context) (string, string) {
	mode := kb.cfg.Ingest.OCR
	if mode == "" {
		mode = load.OCROff
	}
	t, err := load.FindTesseract()
	if err != nil {
		switch mode {
		case load.OCROn:
			return CheckFail, "ingest.ocr is on, but " + err.Error()
		case load.OCRAuto:
			return CheckWarn, "ingest.ocr is auto: scans are reported as needing OCR, since " + err.Error()
		}
		return CheckOK, "off; tesseract is not installed (apt install tesseract-ocr to read scans)"
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(vctx, t.Path, "--version").CombinedOutput()
	version, _, _ := strings.Cut(string(out), "\n")
	return CheckOK, fmt.Sprintf("%s; %s at %s", mode, strings.TrimSpace(version), t.Path)
}

func (kb *KB) doctorStore(ctx context.Context) (string, string) {
	e, err := kb.store.Describe(ctx)
	if err != nil {
		return CheckFail, fmt.Sprintf("%s: %v", kb.StoreURL(), err)
	}
	cs, err := kb.store.Collections(ctx)
	if err != nil {
		return CheckFail, fmt.Sprintf("%s: list collections: %v", kb.StoreURL(), err)
	}
	engine := strings.TrimSpace(e.Name + " " + e.Version)
	names := slices.Sorted(maps.Keys(e.Extensions))
	for _, name := range names {
		engine += fmt.Sprintf(", %s %s", name, e.Extensions[name])
	}
	return CheckOK, fmt.Sprintf("%s (%s); %d collections", kb.StoreURL(), engine, len(cs))
}

// doctorPrivileges warns when the store's role holds more than Quarry
// needs at run time, or when raw fragments cannot run fenced.
func (kb *KB) doctorPrivileges(ctx context.Context, pa store.PrivilegeAuditor) (string, string) {
	p, err := pa.Privileges(ctx)
	if err != nil {
		return CheckWarn, err.Error()
	}
	var notes []string
	state := CheckOK
	if len(p.Excess) > 0 {
		state = CheckWarn
		notes = append(notes, fmt.Sprintf("%s holds more than Quarry needs at run time: %s; run Quarry as a role with only its grants (quarry setup --store URL --runtime-role NAME prints them) and keep this one for setup",
			p.Role, strings.Join(p.Excess, ", ")))
	} else {
		notes = append(notes, p.Role+" holds no more than Quarry needs")
	}
	if p.Fragments {
		notes = append(notes, "raw filter fragments run fenced (least-privileged role, statement time limit)")
	} else {
		notes = append(notes, "raw filter fragments are refused: their fenced role is missing (quarry setup --store URL, as the owner, creates it)")
	}
	return state, strings.Join(notes, "; ")
}

func (kb *KB) doctorCollection(ctx context.Context) (string, string) {
	c, err := kb.StoreCollection(ctx, "", false)
	if err != nil {
		if errors.Is(err, store.ErrCollectionNotFound) {
			return CheckWarn, fmt.Sprintf("%q does not exist yet: quarry ingest PATH creates it", kb.DefaultCollection())
		}
		return CheckFail, err.Error()
	}
	if err := kb.CheckModel(c); err != nil {
		return CheckFail, err.Error()
	}
	h, err := kb.Health(ctx, Developer(), "", false)
	if err != nil {
		return CheckFail, fmt.Sprintf("health: %v", err)
	}
	detail := fmt.Sprintf("%q: %d chunks, %d nodes; %d serious findings, %d warnings (quarry health)", h.Collection, h.Chunks, h.Nodes, h.Serious, h.Warnings)
	switch {
	case h.Serious > 0:
		return CheckFail, detail
	case h.Warnings > 0:
		return CheckWarn, detail
	}
	return CheckOK, detail
}
