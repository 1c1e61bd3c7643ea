package quarry_test

import (
	"context"
	"testing"

	"github.com/quarry-rag/quarry"
)

func TestDoctor(t *testing.T) {
	ctx := context.Background()
	states := func(d *quarry.Doctor) map[string]string {
		m := map[string]string{}
		for _, c := range d.Checks {
			m[c.Name] = c.State
			if c.Detail == "" {
				t.Errorf("check %s says nothing", c.Name)
			}
		}
		return m
	}
	t.Chdir(t.TempDir())
	t.Setenv("QUARRY_KB", "")
	d, err := quarry.RunDoctor(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := states(d)
	for name, want := range map[string]string{"knowledge base": quarry.CheckWarn, "embedder": quarry.CheckOK, "keyword search": quarry.CheckOK,
		"pdf engine": quarry.CheckOK, "store": quarry.CheckOK, "collection": quarry.CheckWarn} {
		if got[name] != want {
			t.Errorf("without a knowledge base, %s is %q, want %q (%+v)", name, got[name], want, d.Checks)
		}
	}
	if !d.OK {
		t.Errorf("warnings alone failed the doctor: %+v", d.Checks)
	}

	// A knowledge base with a collection; OCR asked for where no
	// tesseract can be found fails its check.
	dir := t.TempDir()
	kb, err := quarry.Open(ctx, dir, quarry.Create(), quarry.WithOCR("on"))
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	if _, err := kb.Collection("").Add(ctx, quarry.NewDocument{Text: "Refunds are paid within fourteen days of the return.", Source: "refunds.md"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	if d, err = kb.Doctor(ctx, quarry.Developer()); err != nil {
		t.Fatal(err)
	}
	got = states(d)
	if got["ocr"] != quarry.CheckFail || got["store"] != quarry.CheckOK || got["collection"] == quarry.CheckFail || d.OK {
		t.Errorf("checks %+v", d.Checks)
	}
}
